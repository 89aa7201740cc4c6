"""The virtual phone's device model: the dump's format and geometry, input, navigation, state."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from agents.phone import NotIdle
from agents.phone.device.apps import load_app
from agents.phone.device.phone import VirtualPhone
from support.phone_ui import bounds, centre, dump, find, nodes, scroll, tap, texts

ATTRS = ["index", "text", "resource-id", "class", "package", "content-desc", "checkable", "checked", "clickable",
         "enabled", "focusable", "focused", "scrollable", "long-clickable", "password", "selected", "bounds"]


@pytest.fixture
def phone():
    return VirtualPhone()


def settings(phone, *path):
    phone.launch("com.android.settings")
    for label in path:
        tap(phone, label)
    return phone


def test_the_dump_has_uiautomators_exact_format(phone):
    for screen in ([], ["Network & internet"], ["Display", "Display size and text"], ["About phone", "Device name"],
                   ["Wallpaper & style", "Change wallpaper", "Life"]):
        phone.reset()
        if screen:
            settings(phone, *screen)
        xml = phone.dump_ui()
        assert xml.startswith("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node ")
        root = ET.fromstring(xml.encode())
        assert root.tag == "hierarchy" and list(root.attrib) == ["rotation"] and len(root) == 1
        top = root[0]
        assert top.get("class") == "android.widget.FrameLayout"
        assert (bounds(top) == (0, 0, 1080, 2400)) is (screen[-1:] != ["Device name"])  # a dialog: its window only
        for parent in root.iter("node"):
            assert list(parent.attrib) == ATTRS
            assert all(parent.get(f) in ("true", "false") for f in ATTRS[6:16])
            left, top_, right, bottom = bounds(parent)
            assert 0 <= left < right <= 1080 and 0 <= top_ < bottom <= 2400
            for i, child in enumerate(parent.findall("node")):
                assert child.get("index") == str(i)
                cl, ct, cr, cb = bounds(child)
                assert left <= cl and top_ <= ct and cr <= right and cb <= bottom, (parent.attrib, child.attrib)


def test_text_is_escaped_and_unicode_survives():
    name = 'Tom\'s "best" <phone> & co · Wi\u2011Fi 日本'
    phone = VirtualPhone(overrides={"settings.device_name": name})
    settings(phone, "About phone")
    assert name in texts(phone)
    assert "&quot;best&quot; &lt;phone&gt; &amp; co" in phone.dump_ui()


def test_scrolling_shows_exactly_what_is_in_the_viewport(phone):
    settings(phone)
    assert find(phone, "About phone") is None and find(phone, "Settings") is not None
    first = phone.dump_ui()
    scroll(phone)
    root = dump(phone)
    box = bounds(next(n for n in nodes(root) if n.get("scrollable") == "true"))
    assert find(phone, "Settings") is None          # scrolled out: absent, not drawn off-screen
    for n in nodes(root):
        if n.get("text"):
            l, t, r, b = bounds(n)
            assert box[1] <= t and b <= box[3]
    for _ in range(10):
        scroll(phone)
    assert find(phone, "Tips & support") is not None
    last = phone.dump_ui()
    scroll(phone)
    assert phone.dump_ui() == last                  # clamped at the end
    for _ in range(12):
        scroll(phone, up=False)
    assert phone.dump_ui() == first                 # and at the top


def test_a_short_drag_is_a_tap_and_a_long_one_scrolls_by_its_distance(phone):
    settings(phone)
    before = find(phone, "Apps")
    phone.swipe(*centre(before), centre(before)[0], centre(before)[1] - 10, 300)   # under the touch slop
    assert phone.state()["foreground"]["screen"] == "settings:apps"
    phone.key("KEYCODE_BACK")
    assert bounds(find(phone, "Apps")) == bounds(before)
    phone.swipe(540, 1500, 540, 1200, 300)
    assert bounds(find(phone, "Apps"))[1] == bounds(before)[1] - 300


def test_taps_hit_the_deepest_clickable_and_nothing_else(phone):
    settings(phone, "Network & internet")
    state = phone.state()
    phone.tap(540, 60)                               # status bar
    phone.tap(540, 2380)                             # gesture handle
    title = find(phone, "Network & internet")
    phone.tap(*centre(title))                        # the collapsing title is not clickable
    assert phone.state() == state
    switch = [n for n in nodes(dump(phone)) if n.get("class") == "android.widget.Switch"][0]
    phone.tap(*centre(switch))                       # the switch itself toggles its row
    assert phone.state()["settings"]["airplane_mode"] is True
    assert [n for n in nodes(dump(phone)) if n.get("class") == "android.widget.Switch"][0].get("checked") == "true"


def test_back_home_launch_and_focus(phone):
    assert phone.focus() == ("com.google.android.apps.nexuslauncher", ".NexusLauncherActivity")
    settings(phone, "Display")
    assert phone.focus() == ("com.android.settings", ".SubSettings")
    assert phone.key("KEYCODE_BACK") and phone.state()["foreground"]["screen"] == "settings:home"
    assert phone.focus() == ("com.android.settings", ".Settings")
    phone.key("4")                                   # back from the task's root: home
    assert phone.state()["foreground"]["screen"] == "launcher:home"
    settings(phone, "Display")
    phone.key("KEYCODE_HOME")
    assert phone.state()["foreground"]["screen"] == "launcher:home"
    tap(phone, "Settings")                           # the icon resumes the task where it was
    assert phone.state()["foreground"]["screen"] == "settings:display"
    assert phone.launch("com.android.settings")      # launch starts afresh
    assert phone.state()["foreground"]["screen"] == "settings:home"
    assert phone.launch("com.android.settings", "com.android.settings.Settings$BluetoothSettingsActivity")
    assert phone.state()["foreground"]["screen"] == "settings:bluetooth"
    assert not phone.launch("com.example.nothing") and not phone.launch("com.android.settings", ".Nope")
    assert not phone.key("KEYCODE_NOT_A_KEY")
    assert phone.launch("com.google.android.deskclock")
    assert phone.focus() == ("com.google.android.deskclock", "com.android.deskclock.DeskClock")
    phone.force_stop("com.google.android.deskclock")
    assert phone.focus()[0] == "com.google.android.apps.nexuslauncher"


def test_gesture_navigation(phone):
    settings(phone, "Battery")
    phone.swipe(5, 1200, 500, 1200, 200)             # from the left edge: back
    assert phone.state()["foreground"]["screen"] == "settings:home"
    phone.swipe(540, 2390, 540, 1600, 200)           # up from the handle: home
    assert phone.state()["foreground"]["screen"] == "launcher:home"


def test_dialogs_are_modal(phone):
    settings(phone, "About phone", "Device name")
    root = dump(phone)
    assert bounds(root[0]) != (0, 0, 1080, 2400)     # only the dialog's window is dumped
    assert find(phone, "Model") is None
    phone.type_text(" XL")
    phone.tap(540, 300)                              # outside: the dialog is cancelled
    assert phone.state()["foreground"]["screen"] == "settings:about"
    assert phone.state()["settings"]["device_name"] == "Pixel 7"
    tap(phone, "Device name")
    phone.type_text(" XL")
    tap(phone, "OK")
    assert phone.state()["settings"]["device_name"] == "Pixel 7 XL"


def test_typing_needs_a_focused_field_and_enter_submits(phone):
    phone.type_text("hello")                         # nothing focused on the home screen
    assert json.dumps(phone.state()).count("hello") == 0
    phone.swipe(540, 1500, 540, 700, 300)            # swipe up on the home screen: the app drawer
    assert phone.state()["foreground"]["screen"] == "launcher:drawer"
    assert find(phone, "Calculator") is not None
    tap(phone, "Search your phone and more")
    phone.type_text("clx")
    phone.key("KEYCODE_DEL")
    phone.type_text("ock")
    assert find(phone, "Calculator") is None and find(phone, "Clock") is not None
    phone.key("KEYCODE_ENTER")
    assert phone.state()["foreground"] == {"package": "com.google.android.googlequicksearchbox",
                                           "activity": "com.google.android.googlequicksearchbox.SearchActivity",
                                           "screen": "google:placeholder", "placeholder": True}


def test_settings_search_finds_pages(phone):
    settings(phone, "Search settings")
    phone.type_text("wi-fi")                         # finds "Wi\u2011Fi"
    tap(phone, "Network & internet > Internet")
    assert phone.state()["foreground"]["screen"] == "settings:internet"


def test_a_busy_screen_is_not_idle(phone):
    settings(phone, "System", "System update")
    phone.tap(*centre(find(phone, "Check for update")))
    with pytest.raises(NotIdle):
        phone.dump_ui()
    assert "Last checked for update" in " ".join(texts(phone))


def test_sliders_take_taps_and_drags(phone):
    settings(phone, "Display", "Display size and text")
    bar = next(n for n in nodes(dump(phone)) if n.get("content-desc") == "Font size")
    left, top, right, bottom = bounds(bar)
    phone.tap(right - 5, (top + bottom) // 2)
    assert phone.state()["settings"]["font_size"] == {"step": 6, "label": "200%"}
    phone.swipe(right - 5, (top + bottom) // 2, left, (top + bottom) // 2, 400)
    assert phone.state()["settings"]["font_size"] == {"step": 0, "label": "85%"}


def test_state_reset_overrides_and_start():
    phone = VirtualPhone(overrides={"settings": {"wifi": False}}, start="settings:display")
    assert phone.state()["settings"]["wifi"] is False and phone.state()["foreground"]["screen"] == "settings:display"
    tap(phone, "Dark theme")
    phone.reset()
    state = phone.state()
    assert state["settings"]["dark_theme"] is False and state["settings"]["wifi"] is False
    assert state["visited"][-1] == "settings:display"
    fresh = VirtualPhone().state()
    assert fresh["foreground"]["screen"] == "launcher:home" and fresh["visited"] == ["launcher:home"]
    assert {"settings", "device", "foreground", "visited"} <= set(fresh)
    json.dumps(fresh)


def test_device_facts(phone):
    assert phone.screen_size() == (1080, 2400)
    assert phone.properties()["ro.build.version.sdk"] == "34"
    assert "com.android.settings" in phone.packages() and "com.android.systemui" in phone.packages()
    assert phone.launcher_activity("com.android.settings") == ".Settings"
    assert phone.launcher_activity("com.example.nothing") is None


def test_a_broken_app_definition_is_named(tmp_path):
    app = {"id": "x", "package": "com.x", "main": "home",
           "screens": {"home": {"body": [{"type": "pref", "tap": [{"goto": "y"}]}]}}}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(app))
    with pytest.raises(ValueError, match=r"x.json: screen 'home' body\[0\] tap\[0\]"):
        load_app(path)
    app["screens"]["home"]["body"] = [{"type": "bogus"}]
    path.write_text(json.dumps(app))
    with pytest.raises(ValueError, match="a widget needs a type"):
        load_app(path)
