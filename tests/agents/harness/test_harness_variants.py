"""Drawn task variants: every template, for several seeds, makes a valid task whose check fails on the
phone's start state, passes once the intended change is made, and fails on each near miss; draws are
deterministic and distinct; the pools hold only values the phone has and the shipped tasks do not use."""
from __future__ import annotations

import copy
import json
import re

import pytest

from agents.harness.task_eval import load_task_files
from agents.harness.templates import pools, settings as settings_templates
from agents.harness.variants import APPS, draw, draw_variants, make, templates
from agents.phone.device.apps import load_catalog
from agents.phone.device.checks import check, parse_task
from agents.phone.device.phone import VirtualPhone
from agents.phone.device.paths import has, merge

SEEDS = range(8)
NO_NEAR = {"settings.default_browser"}  # two choices: the only wrong outcome is the start itself
CASES = [(t, seed) for t in templates() for seed in SEEDS]


def test_every_app_has_templates_with_a_kind_and_a_one_line_doc():
    kinds = [t.kind for t in templates()]
    assert len(kinds) == len(set(kinds))
    for app in APPS:
        assert len(templates(app)) >= 9
        assert all(t.kind.startswith(app + ".") and t.app == app for t in templates(app))
    assert all(t.doc and "\n" not in t.doc for t in templates())


@pytest.mark.parametrize("template,seed", CASES, ids=[f"{t.kind}-{s}" for t, s in CASES])
def test_the_check_fails_at_the_start_passes_after_the_change_and_fails_on_near_misses(template, seed, fresh_state):
    variant = make(template, seed, fresh_state)
    line = json.dumps({"id": "x", "app": template.app, "instruction": variant.instruction, "setup": variant.setup,
                       "check": variant.check}, ensure_ascii=False)
    task = parse_task(line)
    assert task.setup == variant.setup and task.check == variant.check
    assert all(has(fresh_state, path) for path in variant.setup), "a setup path the phone does not have"
    start = VirtualPhone(overrides=variant.setup).state()
    assert not check(variant.check, start), f"solved at the start: {variant.instruction}"
    assert check(variant.check, merge(copy.deepcopy(start), copy.deepcopy(variant.effect))), variant.instruction
    assert variant.near or template.kind in NO_NEAR, "no near miss to tell apart"
    for wrong in variant.near:
        assert not check(variant.check, merge(copy.deepcopy(start), copy.deepcopy(wrong))), (variant.instruction, wrong)


def test_a_seed_draws_the_same_tasks_and_another_seed_others(fresh_state):
    before = copy.deepcopy(fresh_state)
    first = draw(None, 6, 7, fresh_state)
    assert fresh_state == before, "drawing changed the fresh state it was given"
    assert first == draw(None, 6, 7, fresh_state)
    other = draw(None, 6, 8, fresh_state)
    assert {t.instruction for t in first}.isdisjoint({t.instruction for t in other}) or \
        len({t.instruction for t in first} & {t.instruction for t in other}) < 3
    assert draw(["clock"], 6, 7, fresh_state) == [t for t in first if t.app == "clock"]


def test_a_draw_gives_k_distinct_tasks_per_app_over_all_their_templates(fresh_state):
    k = 2 * max(len(templates(app)) for app in APPS)
    drawn = draw_variants(["settings", "messages"], k, 3, fresh_state)
    for app in ("settings", "messages"):
        mine = [(t, task) for t, _, task in drawn if task.app == app]
        assert len(mine) == k
        assert {t.kind for t, _ in mine} == {t.kind for t in templates(app)}
        assert len({json.dumps([x.instruction, x.setup, x.check], sort_keys=True) for _, x in mine}) == k
    ids = [task.id for _, _, task in drawn]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"(settings|messages)\.\w+@3\.\d+", i) for i in ids)


def test_a_template_with_few_values_stops_when_it_runs_out(fresh_state, monkeypatch):
    from agents.harness import variants

    monkeypatch.setitem(variants.TEMPLATES, "settings", [t for t in templates("settings")
                                                         if t.kind == "settings.default_browser"])
    tasks = draw(["settings"], 500, 1, fresh_state)
    assert 2 < len(tasks) < 500 and len({t.instruction for t in tasks}) == len(tasks)


def test_unknown_apps_and_negative_counts_are_refused(fresh_state):
    with pytest.raises(ValueError, match=r"^no templates for phone \(apps: settings, clock, contacts, messages\)$"):
        draw(["phone"], 1, 0, fresh_state)
    with pytest.raises(ValueError, match="k must be at least 0"):
        draw(None, -1, 0, fresh_state)
    assert draw(None, 0, 0, fresh_state) == []


def test_the_pools_hold_what_the_phone_has():
    apps = load_catalog().apps
    cities = {c["name"] for c in apps["clock"].data["cities"]}
    assert set(pools.CITIES) <= cities
    sounds = apps["soundpicker"].data["sounds"]
    assert all(set(names) <= set(sounds[category]) for category, names in pools.SOUNDS.items())
    papers = apps["wallpaper"].data["wallpapers"]
    assert all(set(names) <= set(papers[category]) for category, names in pools.WALLPAPERS.items())
    data = apps["settings"].data
    assert set(pools.BT_DEVICES) <= set(data["nearby_devices"])
    languages = {x["name"]: x.get("regions", []) for x in data["languages"]}
    for _, listed, region in pools.LANGUAGES:
        assert listed in languages and (region is None) == (not languages[listed]) and region in languages[listed] + [None]
    networks = {n["name"]: n["secure"] for n in data["networks"]}
    assert all(networks[n] for n in settings_templates.SECURE) and not any(networks[n] for n in settings_templates.OPEN)
    assert (settings_templates.TIMEOUTS, settings_templates.FONT_LABELS, settings_templates.DISPLAY_LABELS) == \
        (data["timeouts"], data["font_labels"], data["display_labels"])
    assert all(len(p) >= 8 for p in pools.WIFI_PASSWORDS), "the Connect button wants 8 characters"


def test_the_pools_avoid_what_the_shipped_tasks_and_the_phone_already_use(fresh_state):
    shipped = " ".join(json.dumps([t.instruction, t.setup, t.check], ensure_ascii=False) for t in load_task_files())
    known = shipped + json.dumps(fresh_state, ensure_ascii=False)
    values = [*pools.FIRST, *pools.LAST, *pools.COMPANIES, *pools.MESSAGES, *pools.OLD_MESSAGES, *pools.ALARM_LABELS,
              *pools.TIMER_LABELS, *pools.CITIES, *pools.DEVICE_NAMES, *pools.WIFI_PASSWORDS, *pools.BT_DEVICES,
              *pools.CONTACT_LABELS, *(n for names in pools.SOUNDS.values() for n in names),
              *(n for names in pools.WALLPAPERS.values() for n in names),
              *(f"{listed} ({region})" if region else listed for _, listed, region in pools.LANGUAGES)]
    used = [v for v in values if re.search(r"\b" + re.escape(v) + r"\b", known)]
    assert used == []
    assert not set(pools.AREAS) & {"650", "415", "408", "510", "800", "202"}
