"""hexa's adb client against the virtual phone over real TCP: observe, act, errors."""
from __future__ import annotations

import pytest

from agents.ui.actions import Action, ActionError
from agents.ui.adb import AdbConnection, DeviceError, parse_address
from agents.ui.device import parse_size
from support.adb_nav import open_pages


def test_connect_learns_the_phone(device):
    assert device.size == (1080, 2400)
    assert {"Settings", "Clock", "Contacts", "Messages"} <= set(device.apps)
    assert device.apps["Settings"] == "com.android.settings"


def test_observe_then_act_changes_the_phone(device, phone_server):
    phone = phone_server[0]
    home = device.observe()
    assert home.elements and home.package
    command = device.perform(Action("open_app", text="Settings"), home.elements, home)
    assert command.startswith("monkey -p com.android.settings")
    settings = device.observe()
    assert settings.package == "com.android.settings"
    assert phone.state()["foreground"]["package"] == "com.android.settings"
    target = next(i for i, e in enumerate(settings.elements, 1) if e.label == "Network & internet")
    device.perform(Action("tap", target), settings.elements, settings)
    assert device.observe().title != settings.title
    device.perform(Action("back"), [], settings)
    assert device.observe().signature() == settings.signature()


def test_a_screen_that_never_settles_is_retried_then_reported(device, monkeypatch):
    import agents.ui.device as device_module

    monkeypatch.setattr(device_module, "RETRY_S", 0.01)
    device.conn.shell("hexa-phone busy 2")
    assert device.observe().elements                       # third try works
    device.conn.shell("hexa-phone busy 5")
    with pytest.raises(DeviceError, match="could not read the screen after 3 tries"):
        device.observe()


def test_typed_text_arrives_exactly_and_nothing_else_runs(device, phone_server):
    phone, server, _ = phone_server
    device.perform(Action("open_app", text="Settings"), [], device.observe())
    screen = device.observe()
    search = next((i for i, e in enumerate(screen.elements, 1) if "search" in (e.label + e.rid).lower()), None)
    if search is None:
        pytest.skip("no search field on the Settings home page")
    screen_elements = screen.elements
    text = "a; b && c $(reboot) `id` 'q' \"d\""
    device.perform(Action("tap", search), screen_elements, screen)
    after = device.observe()
    field = next(i for i, e in enumerate(after.elements, 1) if e.editable)
    device.perform(Action("type", field, text), after.elements, after)
    typed = device.observe()
    assert any(text in (e.text + " ".join(e.details)) for e in typed.elements) or text in typed.xml.replace("&quot;", '"').replace("&apos;", "'").replace("&amp;", "&")
    with pytest.raises(ActionError, match="cannot type"):
        device.perform(Action("type", field, "café"), typed.elements, typed)


def test_bad_addresses_and_closed_ports(tmp_path):
    assert parse_address("10.0.0.2") == ("10.0.0.2", 5555)
    for bad in ("", "host:port", "h:0", "h:70000", ":5555"):
        with pytest.raises(DeviceError):
            parse_address(bad)
    conn = AdbConnection("127.0.0.1:1", tmp_path / "keys", timeout_s=1.0)
    with pytest.raises(DeviceError, match="cannot connect to 127.0.0.1:1"):
        conn.connect()
    assert (tmp_path / "keys" / "adbkey.pub").exists()


def test_a_phone_that_goes_away_is_a_device_error(device, phone_server):
    phone_server[1].stop()
    with pytest.raises(DeviceError):
        device.observe()


def test_wm_size_prefers_the_override():
    assert parse_size("Physical size: 1080x2400\nOverride size: 720x1600") == (720, 1600)
    assert parse_size("Physical size: 1440x3120") == (1440, 3120)
    with pytest.raises(DeviceError):
        parse_size("/system/bin/sh: wm: inaccessible or not found")


def test_typing_replaces_what_a_field_shows_and_a_fresh_launch_starts_over(device, phone_server):
    phone = phone_server[0]
    device.launch("com.google.android.contacts", fresh=True)
    screen = device.observe()
    search = next(e for e in screen.elements if e.label == "Search contacts")
    device.tap(search)
    field = next(e for e in device.observe().elements if e.editable)
    device.type_into(field, "Ana")
    field = next(e for e in device.observe().elements if e.editable)
    device.type_into(field, "Ben")                  # the field is emptied first
    assert phone.state()["contacts"]["search_query"] == "Ben"
    device.launch("com.google.android.contacts", fresh=True)
    assert device.observe().title == screen.title   # back on the app's first screen


def test_a_slider_is_dragged_to_its_end_over_adb(device, phone_server):
    phone = phone_server[0]
    phone.reset({"settings.volume.alarm": 4})
    screen = open_pages(device, "com.android.settings", "Sound & vibration")
    alarm = next(e for e in screen.elements if e.cls == "SeekBar" and "Alarm" in e.label)
    device.slide(alarm, "min")
    assert phone.state()["settings"]["volume"]["alarm"] == 1
    device.slide(alarm, "max")
    assert phone.state()["settings"]["volume"]["alarm"] == 7


def test_a_shell_command_is_one_round_trip_not_a_delayed_ack(device):
    """adb-shell writes a message's header and payload apart: with Nagle's algorithm on, every
    command waited ~40 ms for the phone's delayed ACK (the median here was 43 ms, and exploring an
    app took 20x its time). The median of 20 short commands stays well under that."""
    import statistics
    import time

    took = []
    for _ in range(20):
        start = time.perf_counter()
        assert device.conn.shell("echo ok").strip() == "ok"
        took.append(time.perf_counter() - start)
    assert statistics.median(took) < 0.02, f"median {statistics.median(took) * 1000:.1f} ms a command"
