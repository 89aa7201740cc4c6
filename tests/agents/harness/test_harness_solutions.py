"""Every template's drawn tasks are solvable through the virtual phone's screens: its solution (taps,
typing, long presses, swipes, as harness_ui plays them) makes the check pass from the task's start,
for a few seeds and for one seed of each branch a template has (each switch, each timer operation,
…); and plausible wrong moves through the same screens leave the check failing."""
from __future__ import annotations

import pytest
from support.harness_ui import play, ref, solution, typed_time

from agents.harness.variants import make, templates
from agents.phone.device.checks import check
from agents.phone.device.phone import VirtualPhone

FRESH = VirtualPhone().state()
SCAN = range(300)  # seeds looked through for one of each branch

# template kind -> which branch a variant takes (one seed of each is played)
BRANCHES = {
    "settings.switch": lambda v: (v.params["key"], v.params["on"]),
    "settings.sound": lambda v: v.params["kind"],
    "settings.open_page": lambda v: v.params["page"],
    "settings.wifi_connect": lambda v: (v.params["password"] is None, "settings.wifi" in v.setup),
    "settings.language_add": lambda v: v.params["region"] is None,
    "settings.font_size": lambda v: v.params["step"] > v.params["was"],
    "settings.display_size": lambda v: v.params["step"] > v.params["was"],
    "settings.volume": lambda v: (v.params["stream"], v.params["up"]),
    "settings.bluetooth_pair": lambda v: "settings.bluetooth" in v.setup,
    "settings.wallpaper": lambda v: v.params["where"],
    "clock.alarm_new": lambda v: (bool(v.params["alarm"]["label"]), v.params["alarm"]["minute"] % 5 == 0),
    "clock.alarm_switch": lambda v: (v.params["on"], bool(v.params["alarm"]["label"])),
    "clock.alarm_days": lambda v: v.params["mode"],
    "clock.alarm_vibrate": lambda v: v.params["vibrate"],
    "clock.timer_start": lambda v: bool(v.params["label"]),
    "clock.timer_control": lambda v: (v.params["op"], v.params["tab"] == "timer"),
    "clock.stopwatch": lambda v: (v.params["op"], v.params["tab"] == "stopwatch"),
    "contacts.create": lambda v: tuple(bool(v.params[k]) for k in ("phone", "email", "company")) + (v.params["phone_label"],),
    "contacts.edit": lambda v: (v.params["field"], bool(v.params["contact"][v.params["field"]])),
    "contacts.favorite": lambda v: v.params["favorite"],
    "contacts.label_create": lambda v: v.params["member"] is None,
    "messages.send_existing": lambda v: (" " in v.params["name"], v.params["name"][0].isdigit()),
    "messages.block": lambda v: v.params["conversation"] is None,
    "messages.flag": lambda v: (v.params["key"], v.params["on"]),
    "messages.star": lambda v: v.params["starred"],
    "messages.schedule": lambda v: v.params["date"][:3],
}


def cases() -> list:
    out = []
    for template in templates():
        seeds = {0: None, 1: None}
        branch = BRANCHES.get(template.kind)
        if branch:
            for seed in SCAN:
                seeds.setdefault(branch(make(template, seed, FRESH)), seed)
        out += [pytest.param(template, seed, id=f"{template.kind}-{seed}")
                for seed in sorted({s for s in seeds.values() if s is not None} | {0, 1})]
    return out


def test_every_template_has_a_solution_and_every_branch_was_found():
    for template in templates():
        assert solution(template.kind, make(template, 0, FRESH))
    assert len(cases()) > 2 * len(templates())


@pytest.mark.parametrize("template,seed", cases())
def test_the_solution_through_the_screens_passes_the_check(template, seed):
    variant = make(template, seed, FRESH)
    phone = VirtualPhone(overrides=variant.setup)
    assert not check(variant.check, phone.state())
    play(phone, solution(template.kind, variant))
    state = phone.state()
    assert check(variant.check, state), (variant.instruction, state["foreground"]["screen"])


def first(kind: str, want) -> tuple:
    """The first seed of ``kind`` whose variant satisfies ``want``, with the variant and its phone."""
    template = next(t for t in templates() if t.kind == kind)
    seed = next(s for s in SCAN if want(make(template, s, FRESH)))
    variant = make(template, seed, FRESH)
    return variant, VirtualPhone(overrides=variant.setup)


def wrong_move_fails(variant, phone, steps) -> None:
    play(phone, steps)
    assert phone.state() != VirtualPhone(overrides=variant.setup).state(), "the wrong move changed nothing"
    assert not check(variant.check, phone.state()), variant.instruction


def test_switching_the_near_twin_alarm_fails():
    def twin(v):
        return next((a for a in v.setup["clock.alarms"] if a["hour"] == v.params["alarm"]["hour"]
                     and a != v.params["alarm"]), None)

    variant, phone = first("clock.alarm_switch", twin)
    wrong_move_fails(variant, phone, ["Clock", ("card", ref(twin(variant)), "onoff")])


def test_a_new_alarm_in_the_other_half_of_the_day_fails():
    variant, phone = first("clock.alarm_new", lambda v: True)
    a = variant.params["alarm"]
    wrong_move_fails(variant, phone, ["Clock", "Add alarm", *typed_time(
        a["hour"], a["minute"], "PM" if a["ampm"] == "AM" else "AM", "9", "41")])


def test_deleting_the_namesake_contact_fails():
    variant, phone = first("contacts.delete", lambda v: len([c for c in v.setup["contacts.list"]
                                                             if c["first"] == v.params["contact"]["first"]]) == 2)
    twin = next(c for c in variant.setup["contacts.list"] if c["first"] == variant.params["contact"]["first"]
                and c["id"] != variant.params["contact"]["id"])
    wrong_move_fails(variant, phone, ["Contacts", f"{twin['first']} {twin['last']}", "More options", "Delete", "Delete"])


def test_texting_the_namesake_fails():
    variant, phone = first("messages.send_existing", lambda v: len(
        [c for c in v.setup["messages.conversations"] if c["with"].split()[0] == v.params["name"].split()[0]]) == 2)
    twin = next(c for c in variant.setup["messages.conversations"]
                if c["with"].split()[0] == variant.params["name"].split()[0] and c["id"] != variant.params["conversation"]["id"])
    wrong_move_fails(variant, phone, ["Messages", twin["with"], "Text message", ("type", variant.params["text"]), "Send SMS"])


def test_a_wrong_wifi_password_fails():
    variant, phone = first("settings.wifi_connect", lambda v: v.params["password"] and "settings.wifi" not in v.setup)
    wrong_move_fails(variant, phone, ["Settings", "Network & internet", "Internet", variant.params["network"],
                                      ("type", variant.params["password"] + "x"), "Connect"])


def test_the_right_sound_in_the_wrong_picker_fails():
    variant, phone = first("settings.sound", lambda v: v.params["kind"] == "ringtone")
    p = variant.params
    wrong_move_fails(variant, phone, ["Settings", "Sound & vibration", "Default notification sound", p["category"], p["name"]])


# other right ways to do it: the check must not insist on the one path the solutions take
def right_move_passes(variant, phone, steps) -> None:
    play(phone, steps)
    assert check(variant.check, phone.state()), variant.instruction


def test_texting_a_number_thread_through_start_chat_in_another_format_passes():
    variant, phone = first("messages.send_existing", lambda v: v.params["name"][0] in "+(0123456789")
    digits = "".join(ch for ch in variant.params["conversation"]["number"] if ch.isdigit())[-10:]
    right_move_passes(variant, phone, ["Messages", "Start chat", ("type", digits), f"Send to {digits}",
                                       "Text message", ("type", variant.params["text"]), "Send SMS"])


def test_texting_a_contact_from_the_contacts_app_passes():
    variant, phone = first("messages.send_contact", lambda v: True)
    c = variant.params["contact"]
    right_move_passes(variant, phone, ["Contacts", f"{c['first']} {c['last']}", "Text", "Text message",
                                       ("type", variant.params["text"]), "Send SMS"])


def test_making_the_added_language_the_system_language_passes():
    variant, phone = first("settings.language_add", lambda v: v.params["region"] is None)
    listed = variant.params["listed"]
    right_move_passes(variant, phone, ["Settings", "System", "Languages", "System languages", "Add a language",
                                       "Search", ("type", listed[:min(3, len(listed) - 1)]), listed, "Change"])


def test_a_new_number_typed_in_another_format_passes():
    variant, phone = first("contacts.edit", lambda v: v.params["field"] == "phone")
    c, digits = variant.params["contact"], "".join(ch for ch in variant.params["value"] if ch.isdigit())[-10:]
    right_move_passes(variant, phone, ["Contacts", f"{c['first']} {c['last']}", "Edit contact", c["phone"],
                                       *[("key", "KEYCODE_DEL")] * len(c["phone"]), ("type", digits), "Save"])
