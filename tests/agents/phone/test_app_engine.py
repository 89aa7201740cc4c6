"""Engine pieces the Contacts and Messages definitions lean on: ``[key=path]`` selectors in paths,
``contains`` over a list's texts, the ``each`` action, lists with ``let``/``sort``/``section``, the
``use``/``count``/``lines`` template directives, the ``vcard`` filter, ``write`` steps and inverted switches."""
from __future__ import annotations

from agents.phone.device.actions import run
from agents.phone.device.checks import check
from agents.phone.device.paths import get, put, render
from agents.phone.device.views import View

STATE = {"people": [{"id": 1, "name": "bea", "tags": ["x"]}, {"id": 2, "name": "Al", "tags": []},
                    {"id": 3, "name": "Cy", "tags": ["y"]}], "args": {"id": 2}, "local": {"who": "Cy"}}


def test_selectors_find_an_element_by_a_field():
    assert get(STATE, "people[id=args.id].name") == "Al"
    assert get(STATE, "people[name=local.who].id") == 3
    assert get(STATE, "people[name='bea'].id") == 1
    assert get(STATE, "people[id='3'].name") == "Cy"  # ids typed as text still match
    assert get(STATE, "people[id=args.missing]") is None and get(STATE, "people[name='Zed'].id") is None
    assert get(STATE, "people[id=people[name='Cy'].id].name") == "Cy"  # nested
    data = {"people": [dict(p) for p in STATE["people"]], "args": {"id": 2}}
    put(data, "people[id=args.id].name", "Alan")
    assert data["people"][1]["name"] == "Alan"


def test_contains_searches_the_texts_inside_a_list_not_its_keys_or_flags():
    msgs = {"m": [{"from_me": True, "text": "Row F, seat 12"}]}
    assert check({"contains": ["m", "row f"]}, msgs)
    assert not check({"contains": ["m", "from_me"]}, msgs) and not check({"contains": ["m", "true"]}, msgs)
    assert check({"contains": ["m", ""]}, msgs) and check({"contains": ["missing", ""]}, msgs)
    assert check({"contains": ["m[0].text", "SEAT"]}, msgs)


class _Device:
    busy = 0


def test_each_runs_steps_per_matching_element():
    data = {"people": [dict(p) for p in STATE["people"]], "local": {"picked": [1, 3]}}
    run(_Device(), [{"each": "people", "where": {"in": ["local.picked", "{item.id}"]},
                     "then": [{"set": "item.tags", "value": ["done"]}]}], data)
    assert [p["tags"] for p in data["people"]] == [["done"], [], ["done"]]


def test_lists_sort_case_insensitively_and_head_each_section():
    widget = {"type": "list", "each": "people", "let": {"letter": "{item.name[0]}"}, "sort": "item.name",
              "section": "letter", "section_item": {"type": "text", "text": "[{section}]"},
              "item": {"type": "text", "text": "{item.name} #{index}"}}
    nodes, _ = View("p").build([widget], dict(STATE), 0, 1080)
    assert [n.text for n in nodes] == ["[A]", "Al #1", "[b]", "bea #0", "[C]", "Cy #2"]


def test_named_templates_counts_and_text_made_of_lines():
    ctx = {"people": [dict(p) for p in STATE["people"]], "fmt": "last",
           "data": {"name": {"if": {"eq": ["fmt", "last"]}, "then": "{item.name}!", "else": "{item.name}"}}}
    assert render({"use": "data.name", "item": "{people[1]}"}, ctx, check) == "Al!"
    assert render({"use": "data.name"}, dict(ctx, item={"name": "Zed"}), check) == "Zed!"
    assert render({"count": "people", "where": {"gt": ["item.tags.length", 0]}}, ctx, check) == 2
    assert render({"count": "people"}, ctx, check) == 3
    text = render({"each": "people", "sep": "\r\n", "lines": [
        "N:{item.name|vcard}", {"if": {"truthy": "item.tags"}, "then": "T:{item.tags|vcard}"}, "#{index}"]}, ctx, check)
    assert text == "N:bea\r\nT:x\r\n#0\r\nN:Al\r\n#1\r\nN:Cy\r\nT:y\r\n#2\r\n"
    assert render({"lines": ["a", None, "b"]}, ctx, check) == "a\nb\n"


def test_the_vcard_filter_escapes_text_values_and_joins_lists():
    assert render("{v|vcard}", {"v": "Smith, Jr; a\\b\nc"}) == "Smith\\, Jr\\; a\\\\b\\nc"
    assert render("{v|vcard}", {"v": ["Book club", "A,B"]}) == "Book club,A\\,B"


class _Files(_Device):
    def __init__(self):
        self.written: dict[str, str] = {}

    def write_file(self, path: str, text: str) -> bool:
        self.written[path] = text
        return True


def test_steps_append_to_a_missing_list_see_the_index_and_write_files():
    data = {"m": [{"t": "a"}, {"t": "b"}, {"t": "c"}], "local": {"sel": [0, 2], "name": "x.txt"}}
    device = _Files()
    run(device, [{"append": "m[1].marks", "value": "star"},
                 {"each": "m", "where": {"in": ["local.sel", "{index}"]}, "then": [{"set": "item.on", "value": True}]},
                 {"write": "/sdcard/{local.name}", "text": {"lines": ["{m[0].t}", "{m.length}"]}}], data)
    assert data["m"][1]["marks"] == ["star"] and [m.get("on") for m in data["m"]] == [True, None, True]
    assert device.written == {"/sdcard/x.txt": "a\n3\n"}
    run(device, [{"remove": "m", "where": {"eq": ["index", 1]}}], data)
    assert [m["t"] for m in data["m"]] == ["a", "c"]


def test_an_inverted_switch_shows_on_while_the_flag_is_off():
    widget = {"type": "pref", "title": "Notifications", "switch": {"bind": "c.muted", "invert": True}}
    for muted, shown in ((False, "true"), (True, "false")):
        nodes, _ = View("p").build([widget], {"c": {"muted": muted}}, 0, 1080)
        switch = [n for n in nodes[0].walk() if n.cls == "android.widget.Switch"][0]
        assert str(switch.checked).lower() == shown
        assert nodes[0].tap == [{"toggle": "c.muted"}]
