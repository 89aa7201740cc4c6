"""The task-check predicate language, the task loader and the dotted paths they use."""
from __future__ import annotations

import pytest

from agents.phone.device.checks import check, load_tasks
from agents.phone.device.paths import get, put, render

STATE = {"settings": {"wifi": False, "languages": ["English (United States)", "Aghem"], "font_size": {"step": 2},
                      "ringtone": {"category": "Pixel Sounds", "name": "Copycat"}, "name": "Wi\u2011Fi phone"},
         "clock": {"alarms": [{"label": "meeting", "on": True}]}, "visited": ["launcher:home", "settings:battery"],
         "foreground": {"screen": "settings:battery"}}


@pytest.mark.parametrize("pred, expected", [
    ({"eq": ["settings.wifi", False]}, True),
    ({"eq": ["settings.wifi", 0]}, True),
    ({"eq": ["settings.missing", None]}, True),
    ({"ne": ["settings.wifi", True]}, True),
    ({"in": ["settings.languages", "Aghem"]}, True),
    ({"in": ["settings.languages", "Agh"]}, False),
    ({"in": ["settings.name", "phone"]}, True),
    ({"contains": ["settings.name", "WI-FI"]}, True),
    ({"gt": ["settings.font_size.step", 1]}, True),
    ({"le": ["settings.font_size.step", 1]}, False),
    ({"gt": ["settings.missing", 1]}, False),
    ({"gt": ["settings.name", 1]}, False),
    ({"eq": ["settings.ringtone", {"category": "Pixel Sounds", "name": "Copycat"}]}, True),
    ({"eq": ["clock.alarms[0].label", "meeting"]}, True),
    ({"eq": ["settings.languages.length", 2]}, True),
    ({"truthy": "clock.alarms[0].on"}, True),
    ({"visited": "settings:battery"}, True),
    ({"visited": "settings:battery_usage"}, False),
    ({"foreground": "settings:battery"}, True),
    ({"all": [{"eq": ["settings.wifi", False]}, {"in": ["settings.languages", "Aghem"]}]}, True),
    ({"all": [{"eq": ["settings.wifi", False]}, {"in": ["settings.languages", "Klingon"]}]}, False),
    ({"any": [{"eq": ["settings.wifi", True]}, {"visited": "launcher:home"}]}, True),
    ({"any": []}, False),
    ({"all": []}, True),
    ({"not": {"eq": ["settings.wifi", True]}}, True),
])
def test_predicates(pred, expected):
    assert check(pred, STATE) is expected


@pytest.mark.parametrize("pred, message", [
    ("settings.wifi", "exactly one operator"),
    ({}, "exactly one operator"),
    ({"eq": ["a", 1], "ne": ["a", 2]}, "exactly one operator"),
    ({"equals": ["a", 1]}, "unknown operator 'equals'"),
    ({"eq": ["a"]}, r"takes \[path, value\]"),
    ({"eq": [1, 1]}, r"takes \[path, value\]"),
    ({"all": {"eq": ["a", 1]}}, "takes a list"),
    ({"not": "x"}, "exactly one operator"),
    ({"visited": 3}, "takes a string"),
    ({"any": [{"eq": ["settings.wifi", False]}, {"bogus": 1}]}, "unknown operator 'bogus'"),  # no short-circuit
])
def test_malformed_predicates_are_value_errors(pred, message):
    with pytest.raises(ValueError, match=message):
        check(pred, STATE)


def test_load_tasks_names_the_bad_line(tmp_path):
    good = '{"app": "settings", "instruction": "Turn off Wi-Fi.", "check": {"eq": ["settings.wifi", false]}}'
    path = tmp_path / "t.jsonl"
    path.write_text(good + "\n\n" + good.replace('"check"', '"setup": {"settings.wifi": true}, "check"') + "\n")
    tasks = load_tasks(path)
    assert len(tasks) == 2 and tasks[1].setup == {"settings.wifi": True}
    assert tasks[0].passed({"settings": {"wifi": False}}) and not tasks[0].passed({"settings": {"wifi": True}})
    for bad, message in [
        ("{not json", r"t.jsonl:3: not JSON"),
        ('{"app": "settings", "instruction": "x"}', r"t.jsonl:3: missing 'check'"),
        ('{"app": "", "instruction": "x", "check": {"visited": "a"}}', r"t.jsonl:3: 'app' must be"),
        ('{"app": "s", "instruction": "x", "check": {"eq": 1}}', r"t.jsonl:3: bad check: 'eq' takes"),
        ('{"app": "s", "instruction": "x", "check": {"visited": "a"}, "extra": 1}', r"t.jsonl:3: unknown keys"),
        ('[1, 2]', r"t.jsonl:3: expected an object"),
    ]:
        path.write_text(good + "\n" + good + "\n" + bad + "\n")
        with pytest.raises(ValueError, match=message):
            load_tasks(path)


def test_paths_and_templates():
    data = {"a": {"list": [10, 20, 30], "i": 1, "key": "x", "map": {"x": "found"}}, "s": "abc"}
    assert get(data, "a.list[a.i]") == 20 and get(data, "a.list.2") == 30 and get(data, "a.map[a.key]") == "found"
    assert get(data, "a.nope.deeper", "dflt") == "dflt" and get(data, "s.length") == 3
    put(data, "a.map[a.key]", "set")
    put(data, "a.new.leaf", 1)
    assert data["a"]["map"]["x"] == "set" and data["a"]["new"] == {"leaf": 1}
    assert render("{a.i}", data) == 1 and render("n={a.i}, {a.missing}!", data) == "n=1, !"
    assert render({"if": {"eq": ["a.i", 1]}, "then": "one", "else": "other"}, data, check) == "one"
    assert render(["{a.key}", {"k": "{a.list[0]}"}], data) == ["x", {"k": 10}]
    with pytest.raises(ValueError):
        get(data, "a.list[0")
