"""Actions: parsing, validity on a screen, and shell quoting against hostile text."""
from __future__ import annotations

import shlex
import subprocess

import pytest

from agents.ui.actions import Action, ActionError, check, parse, swipe_command, text_command
from agents.ui.screen import parse_dump
from support.ui_samples import BLUETOOTH

HOSTILE = ["it's", 'say "hi"', "a; reboot", "x && rm -rf /sdcard", "$(reboot)", "`reboot`",
           "$HOME", "a | grep b", "back\\slash", "*", "~", "#comment", "a > /sdcard/f", "-n"]


@pytest.mark.parametrize("text, action", [
    ("tap(3)", Action("tap", 3)), (" long_press(12) ", Action("long_press", 12)),
    ('type(2, "hello world")', Action("type", 2, "hello world")), ("swipe(up)", Action("swipe", text="up")),
    ("back()", Action("back")), ("home()", Action("home")), ('open_app("Clock")', Action("open_app", text="Clock")),
    ('done("Bluetooth is off")', Action("done", text="Bluetooth is off"))])
def test_parse_and_print_round_trip(text, action):
    assert parse(text) == action
    assert parse(str(action)) == action


@pytest.mark.parametrize("text", ["", "tap", "tap()", "tap(x)", "swipe(sideways)", 'type(2, hello)',
                                  'done("a"b")', "rm(1)", "tap(1); back()"])
def test_not_actions(text):
    with pytest.raises(ActionError):
        parse(text)


def test_validity_on_a_screen():
    screen = parse_dump(BLUETOOTH)
    shown = screen.elements
    check(Action("tap", 1), shown, screen, ["Settings"])
    check(Action("swipe", text="up"), shown, screen, [])
    with pytest.raises(ActionError, match="no element 4"):
        check(Action("tap", 4), shown, screen, [])
    with pytest.raises(ActionError, match="does not take that"):
        check(Action("type", 1, "x"), shown, screen, [])
    with pytest.raises(ActionError, match="no app called"):
        check(Action("open_app", text="Maps"), shown, screen, ["Settings"])


@pytest.mark.parametrize("text", HOSTILE)
def test_typed_text_is_one_literal_argument_for_a_real_sh(text):
    """Run the command in a real POSIX sh with `input` defined as a function that prints its
    arguments: exactly one argument, equal to the text, and nothing else ran."""
    command = text_command(text)
    assert command.startswith("input text ")
    script = ('input() { shift; printf "%s|" "$#"; printf "%s" "$@"; }; reboot() { echo REBOOTED; }; '
              'rm() { echo REMOVED; }; ' + command)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10).stdout
    assert out == f"1|{text}"
    assert shlex.split(command)[2:] == [text]


@pytest.mark.parametrize("text", ["café", "日本", "line\nbreak", "tab\there", "50%s off"])
def test_text_input_text_cannot_carry_is_refused_not_mangled(text):
    with pytest.raises(ActionError, match="cannot type"):
        text_command(text)
    command = text_command(text, adb_keyboard=True)
    assert command.startswith("am broadcast -a ADB_INPUT_B64 --es msg ")
    assert all(c.isalnum() or c in "+/=" for c in command.rsplit(" ", 1)[1])


def test_swipe_stays_inside_the_scrolling_list():
    screen = parse_dump(BLUETOOTH)
    x1, y1, x2, y2 = map(int, swipe_command("up", screen).split()[2:6])
    assert x1 == x2 == 540 and y1 > y2 and 380 < y2 < y1 < 2300
    x1, y1, x2, y2 = map(int, swipe_command("left", screen).split()[2:6])
    assert x1 > x2 and y1 == y2
