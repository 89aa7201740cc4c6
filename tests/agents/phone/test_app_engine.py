"""Engine pieces the Contacts and Messages definitions lean on: ``[key=path]`` selectors in paths,
``contains`` over a list's texts, the ``each`` action, and lists with ``let``/``sort``/``section``."""
from __future__ import annotations

from agents.phone.actions import run
from agents.phone.checks import check
from agents.phone.paths import get, put
from agents.phone.views import View

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
