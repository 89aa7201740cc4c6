"""The phone as the agent uses it: observe the screen, perform an action. Over ``AdbConnection``,
so the same code drives a real phone and the virtual one: only what adb gives (uiautomator,
input, am, monkey, dumpsys, pm, wm, getprop)."""
from __future__ import annotations

import re
import shlex
import time

from .actions import APPS, Action, ActionError, swipe_command, text_command
from .adb import AdbConnection, DeviceError
from .screen import Element, Screen, ScreenError, parse_dump

DUMP_PATH = "/sdcard/window_dump.xml"
DUMP_TRIES = 3
RETRY_S = 0.5
FOCUS = re.compile(r"mCurrentFocus=Window\{[^}]*?\s(?P<pkg>[\w.]+)/(?P<act>[\w.$]+)")
FOCUSED_APP = re.compile(r"mFocusedApp=.*?\s(?P<pkg>[\w.]+)/(?P<act>[\w.$]+)")
SIZE = re.compile(r"(Physical|Override) size:\s*(\d+)x(\d+)")
FAILED = ("Error:", "Exception", "inaccessible or not found", "monkey aborted", "usage:")
FOCUS_COMMAND = "dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'"
KEYS = {"back": "KEYCODE_BACK", "home": "KEYCODE_HOME"}
LAUNCHERS = ("com.google.android.apps.nexuslauncher", "com.android.launcher3", "com.android.launcher")


class Device:
    def __init__(self, conn: AdbConnection):
        self.conn = conn
        self.size: tuple[int, int] = (1080, 2400)
        self.apps: dict[str, str] = {}         # name the model may say -> installed package
        self.adb_keyboard = False
        self.model = ""

    @property
    def address(self) -> str:
        return self.conn.address

    def connect(self) -> None:
        """Connect and learn what the phone is: size, installed apps, keyboard."""
        self.conn.connect()
        self.size = parse_size(self.conn.shell("wm size"))
        installed = {line.partition(":")[2].strip() for line in self.conn.shell("pm list packages").splitlines()}
        self.apps = {name: next(p for p in pkgs if p in installed)
                     for name, pkgs in APPS.items() if any(p in installed for p in pkgs)}
        self.adb_keyboard = "com.android.adbkeyboard" in self.conn.shell("ime list -s")
        self.model = self.conn.shell("getprop ro.product.model").strip()

    def observe(self) -> Screen:
        """The current screen. The old dump is removed first (else a failed dump reads a stale
        one); "could not get idle state" (an animation) and a missing file are retried."""
        # one round trip per step: the dump, then the window in front
        command = f"rm -f {DUMP_PATH}; uiautomator dump {DUMP_PATH}; cat {DUMP_PATH}; {FOCUS_COMMAND}"
        problem = ""
        for attempt in range(DUMP_TRIES):
            out = self.conn.shell(command)
            if "<hierarchy" in out:
                try:
                    screen = parse_dump(out, self.size)
                    break
                except ScreenError as exc:
                    problem = str(exc)
            else:
                problem = _first_line(out) or "empty output"
            time.sleep(RETRY_S * (attempt + 1))
        else:
            raise DeviceError(f"could not read the screen after {DUMP_TRIES} tries ({problem}): "
                              f"the phone may be animating or locked")
        screen.package, screen.activity = parse_focus(out[out.rfind("</hierarchy>"):])
        return screen

    def perform(self, action: Action, shown: list[Element], screen: Screen) -> str:
        """Run ``action``; the shell command(s) sent. ``ActionError`` when the phone refused."""
        commands = self.commands(action, shown, screen)
        for command in commands:
            out = self.conn.shell(command)
            if any(marker in out for marker in FAILED):
                raise ActionError(f"{action}: the phone answered {_first_line(out)!r}")
        return "; ".join(commands)

    def commands(self, action: Action, shown: list[Element], screen: Screen) -> list[str]:
        name = action.name
        if name in ("tap", "long_press", "type"):
            x, y = shown[action.index - 1].center
            if name == "long_press":
                return [f"input swipe {x} {y} {x} {y} 1000"]
            if name == "tap":
                return [f"input tap {x} {y}"]
            return [f"input tap {x} {y}", text_command(action.text, self.adb_keyboard)]
        if name == "swipe":
            return [swipe_command(action.text, screen)]
        if name in KEYS:
            return [f"input keyevent {KEYS[name]}"]
        if name == "open_app":
            package = self.apps.get(action.text)
            if package is None:
                raise ActionError(f"{action}: not installed on this phone")
            return [f"monkey -p {shlex.quote(package)} -c android.intent.category.LAUNCHER 1"]
        if name == "done":
            return []
        raise ActionError(f"unknown action {name}")

    # -- primitives the explorer and the planner's steps use ----------------------------------------
    def run(self, command: str) -> str:
        """One shell command; ``ActionError`` when the phone refused it."""
        out = self.conn.shell(command)
        if any(marker in out for marker in FAILED):
            raise ActionError(f"the phone answered {_first_line(out)!r} to {command.split(' ')[0]}")
        return out

    def tap(self, e: Element) -> str:
        x, y = e.center
        command = f"input tap {x} {y}"
        self.run(command)
        return command

    def long_press(self, e: Element) -> str:
        x, y = e.center
        command = f"input swipe {x} {y} {x} {y} 1000"
        self.run(command)
        return command

    def type_into(self, e: Element, text: str, clear: bool = True) -> str:
        """Focus ``e`` and write ``text`` in it; ``clear`` first empties it (``erase``)."""
        x, y = e.center
        commands = _erasing(e) if clear and e.text else [f"input tap {x} {y}"]
        commands.append(text_command(text, self.adb_keyboard))
        for command in commands:
            self.run(command)
        return "; ".join(commands)

    def erase(self, e: Element) -> str:
        """Focus ``e`` and delete what it shows."""
        commands = _erasing(e)
        for command in commands:
            self.run(command)
        return "; ".join(commands)

    def key(self, name: str) -> str:
        command = f"input keyevent {KEYS.get(name, name)}"
        self.run(command)
        return command

    def swipe(self, direction: str, screen: Screen) -> str:
        command = swipe_command(direction, screen)
        self.run(command)
        return command

    def swipe_away(self, e: Element, direction: str = "left") -> str:
        """Swipe one list row sideways (a world clock's city, a notification): how many lists
        remove a row that has no delete button."""
        x1, y1, x2, y2 = e.bounds
        y = (y1 + y2) // 2
        a, b = (x2 - 20, x1 + 20) if direction == "left" else (x1 + 20, x2 - 20)
        command = f"input swipe {a} {y} {b} {y} 250"
        self.run(command)
        return command

    def slide(self, e: Element, end: str) -> str:
        """Drag a slider (a SeekBar) to its ``max`` or ``min`` end: from its middle to just
        inside that end, as a finger does."""
        x1, y1, x2, y2 = e.bounds
        y = (y1 + y2) // 2
        to = x2 - 10 if end == "max" else x1 + 10
        command = f"input swipe {(x1 + x2) // 2} {y} {to} {y} 300"
        self.run(command)
        return command

    def launch(self, package: str, fresh: bool = False) -> str:
        """Open an app by its launcher icon; ``fresh`` stops it first, so it opens on its first
        screen (a phone resumes an app where it was left)."""
        commands = ([f"am force-stop {shlex.quote(package)}"] if fresh else []) + \
            [f"monkey -p {shlex.quote(package)} -c android.intent.category.LAUNCHER 1"]
        for command in commands:
            self.run(command)
        return "; ".join(commands)

    def close(self) -> None:
        self.conn.close()


def parse_focus(text: str) -> tuple[str, str]:
    """(package, activity) in front, from ``dumpsys window`` lines; ("", "") when none."""
    m = FOCUS.search(text) or FOCUSED_APP.search(text)
    return (m["pkg"], m["act"]) if m else ("", "")


def parse_size(text: str) -> tuple[int, int]:
    """``wm size``: the override size when one is set (that is what the screen uses)."""
    found = {kind: (int(w), int(h)) for kind, w, h in SIZE.findall(text)}
    size = found.get("Override") or found.get("Physical")
    if size is None:
        raise DeviceError(f"unexpected answer to `wm size`: {_first_line(text)!r}")
    return size


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""


def _erasing(e: Element) -> list[str]:
    """The commands that empty a field: focus it, the cursor to the end, then one DEL per
    character it shows (a tap may put the cursor anywhere)."""
    x, y = e.center
    return [f"input tap {x} {y}", "input keyevent KEYCODE_MOVE_END",
            "input keyevent " + " ".join(["KEYCODE_DEL"] * min(len(e.text), 200))]
