"""The UI graph's abstraction on the virtual phone's real screens: rows and their keys, where a
visit is placed, sibling screens' edges, ways through lists; and the value-entry macros driving
the phone's real time picker and timer keypad."""
from __future__ import annotations

import pytest

from agents.phone.device.phone import VirtualPhone
from agents.ui.entry import date_step, digits_step, duration_digits, entry_kind, shown_digits, time_step
from agents.ui.graph import AppGraph, UIEdge, UIScreen, element_key, keys_of
from agents.ui.screen import Screen, parse_dump


def look(phone: VirtualPhone) -> Screen:
    screen = parse_dump(phone.dump_ui(), phone.screen_size())
    screen.package, screen.activity = phone.focus()
    return screen


def tap(phone: VirtualPhone, screen: Screen, label: str) -> Screen:
    e = next(e for e in screen.elements if e.label == label)
    phone.tap(*e.center)
    return look(phone)


@pytest.fixture
def phone():
    return VirtualPhone()


def test_list_rows_are_one_key_and_their_labels_are_data(phone):
    phone.launch("com.google.android.contacts")
    screen = look(phone)
    rows = [e for e in screen.elements if e.rid == "contact_row"]
    assert len(rows) > 3 and all(e.row and element_key(e) == "contact_row" for e in rows)
    known = UIScreen.of(screen)
    assert known.elements["contact_row"].varies            # names differ row to row: data
    assert not known.elements["floating_action_button"].varies
    # an alarm card has no id of its own: known by its class, its switch by its row's time
    phone.launch("com.google.android.deskclock")
    alarms = look(phone)
    cards = [e for e in alarms.elements if element_key(e) == "row:LinearLayout"]
    assert len(cards) == 2
    switch = next(e for e in alarms.elements if e.rid == "onoff" and "8:30 AM" in alarms.row_texts(e))
    assert "7:00 AM" not in alarms.row_texts(switch)


def test_a_visit_is_placed_by_keys_tabs_and_titles(phone):
    phone.launch("com.google.android.deskclock")
    alarms = look(phone)
    g = AppGraph("com.google.android.deskclock")
    g.screens[1] = UIScreen.of(alarms)
    g.screens[1].id = 1
    stopwatch = tap(phone, alarms, "Stopwatch")
    assert any(k.startswith("sel:") for k in keys_of(stopwatch)[0])
    assert g.match(stopwatch)[0] is None                    # another tab: another screen
    assert g.match(tap(phone, stopwatch, "Alarm"))[0] is g.screens[1]
    # Settings pages share their switches: the title tells them apart, and a page whose rows
    # hid when its switch went off is still that page
    phone.launch("com.android.settings")
    page = look(phone)
    page = tap(phone, page, "Connected devices")
    page = tap(phone, page, "Connection preferences")
    bluetooth = tap(phone, page, "Bluetooth")
    s = AppGraph("com.android.settings")
    s.screens[1] = UIScreen.of(bluetooth)
    s.screens[1].id = 1
    off = tap(phone, bluetooth, "Use Bluetooth")
    assert len(off.elements) < len(bluetooth.elements)
    assert s.match(off)[0] is s.screens[1]


def test_dialog_titles_naming_what_opened_them_are_one_screen():
    from agents.ui.graph import title_key, title_matches

    key = title_key("Change system language to Aghem?", opener="Aghem")
    assert key == "title:Change system language to {}?"
    assert title_matches(key, "title:Change system language to Akan?")
    assert title_key("Rename label", opener="Rename label") == "title:Rename label"   # not a wildcard


def test_sibling_screens_lend_their_edges_and_rows_are_avoided_when_they_can_be():
    g = AppGraph("app")
    for sid, title, keys in ((1, "", ["fab", "row", "sel:tab"]), (2, "", ["fab", "row", "sel:tab", "edit"]),
                             (3, "Picker", ["ok"])):
        s = UIScreen(sid, "app", "A", "screen" if sid < 3 else "dialog", title)
        for k in keys:
            if not k.startswith("sel:"):
                from agents.ui.graph import UIElement

                s.elements[k] = UIElement(k, k, "button", row=(k == "row"), labels=[k, k + "2"] if k == "row" else [k])
        s.fixed = {k for k in keys}
        g.screens[sid] = s
    g.home = 1
    g.edges[1] = UIEdge(1, 2, "fab", "tap", "dialog", dst=3)      # seen only on screen 2
    g.edges[2] = UIEdge(2, 1, "row", "tap", "dialog", dst=3)
    assert [e.key for e in g.edges_of(1)] == ["row", "fab"]        # screen 1 borrows screen 2's fab
    assert [e.key for e in g.paths_from(1, rows=False)[3]] == ["fab"]
    assert [e.key for e in g.paths_from(1)[3]] == ["fab"]           # rows last when both get there


def test_the_time_macro_sets_the_real_picker(phone):
    phone.launch("com.google.android.deskclock")
    screen = tap(phone, look(phone), "Add alarm")
    assert entry_kind(screen) == "time"
    for target in ((15, 0), (6, 47)):                        # on the dial; an odd minute typed
        for _ in range(12):
            step = time_step(screen, *target)
            if step is None:
                break
            action, element, text = step
            if action == "tap":
                phone.tap(*element.center)
            else:
                phone.tap(*element.center)
                for _ in range(len(element.text)):
                    phone.key("KEYCODE_DEL")
                phone.type_text(text)
            screen = look(phone)
        assert time_step(screen, *target) is None
        shown = {e.rid: e.text or e.label for e in screen.elements}
        hour = next(v for k, v in shown.items() if "hour" in k)
        minute = next(v for k, v in shown.items() if "minute" in k)
        assert (int(hour), int(minute)) == (target[0] % 12 or 12, target[1])


def test_the_date_macro_sets_the_real_calendar(phone):
    """Schedule send's calendar: a date in the next month; tomorrow (the day after the first one
    not greyed out, on the month it opens on). What it shows chosen is what the OK confirms."""
    phone.launch("com.google.android.apps.messaging")
    screen = tap(phone, look(phone), "Emily Chen")
    box = next(e for e in screen.elements if e.editable)
    phone.tap(*box.center)
    phone.type_text("hi")
    for target, said in (((7, 4), "Thu, Jul 4"), ((None, None), "Thu, Jun 13")):
        send = next(e for e in look(phone).elements if e.label == "Send SMS")
        phone.swipe(*send.center, *send.center, 1000)
        screen = tap(phone, look(phone), "Pick date & time")
        assert entry_kind(screen) == "date"
        for _ in range(8):
            step = date_step(screen, *target)
            if step is None:
                break
            phone.tap(*step[1].center)
            screen = look(phone)
        assert [e.desc for e in screen.elements if e.checked and e.label.isdigit()] == [said]
        tap(phone, screen, "Cancel")


def test_the_keypad_macro_enters_a_duration(phone):
    phone.launch("com.google.android.deskclock")
    screen = tap(phone, look(phone), "Timer")
    assert entry_kind(screen) == "digits"
    want = duration_digits(5400)
    assert want == "13000"
    for _ in range(8):
        step = digits_step(screen, want)
        if step is None:
            break
        phone.tap(*step[1].center)
        screen = look(phone)
    assert shown_digits(screen) == want


def test_a_tab_opens_its_page_from_any_page_that_shows_it():
    from agents.ui.graph import UIElement

    g = AppGraph("app")
    for sid, keys in ((1, ["sel:alarm", "alarm", "clock", "watch"]), (2, ["sel:clock", "alarm", "clock", "watch"]),
                      (3, ["sel:watch", "alarm", "clock", "watch"])):
        s = UIScreen(sid, "app", "A", "screen", f"page {sid}")
        s.elements = {k: UIElement(k, k, "button") for k in keys if not k.startswith("sel:")}
        s.fixed = set(keys)
        g.screens[sid] = s
    g.edges[1] = UIEdge(1, 2, "watch", "tap", "screen", dst=3)    # tried on the Clock page only
    assert [(e.src, e.key, e.dst) for e in g.edges_of(1)] == [(1, "watch", 3)]
    assert [e.key for e in g.paths_from(1)[3]] == ["watch"]


def test_a_page_titled_by_the_row_that_opened_it_is_one_screen_for_every_row():
    from agents.ui.graph import UIElement

    g = AppGraph("app")
    lst = UIScreen(1, "app", "A", "screen", "Contacts")
    lst.elements = {"row": UIElement("row", "Ana Lee", "button", row=True, labels=["Ana Lee", "Ben Carr"])}
    lst.fixed = set()
    page = UIScreen(2, "app", "A", "screen", "Ana Lee")
    page.elements = {k: UIElement(k, k, "button") for k in ("edit", "star", "email", "label", "call", "more")}
    page.fixed = set(page.elements)
    g.screens = {1: lst, 2: page}
    g.edges[1] = UIEdge(1, 1, "row", "tap", "screen", dst=2, label="Ana Lee")
    other = Screen([], ["Ben Carr"], [], package="app", activity="A")
    from agents.ui.screen import Element

    other.elements = [Element(text=k, rid=k, clickable=True, bounds=(0, 200 * i, 1080, 200 * i + 150))
                      for i, k in enumerate(("edit", "star", "call", "more"))]   # no email, no label
    assert g.data_titled() == {2}
    assert g.match(other)[0] is page
    # a sender's name on another list opens that person's page: choosing an object, like a row
    g.screens[3] = UIScreen(3, "app", "A", "screen", "Starred")
    g.screens[3].elements = {"LinearLayout:Ben Carr": UIElement("LinearLayout:Ben Carr", "Ben Carr", "button")}
    g.edges[2] = UIEdge(2, 3, "LinearLayout:Ben Carr", "tap", "screen", dst=2, label="Ben Carr",
                        detail={"titled": True})
    assert g.is_row(g.edges[2]) and 2 not in g.paths_from(3, rows=False)
