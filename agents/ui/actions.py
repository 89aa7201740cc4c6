"""The agent's actions: what may be written on a given screen, how it is parsed, and the shell
command that performs it, quoted so that no text a model writes can run another command.

    tap(i)  long_press(i)  type(i, "text")  swipe(up|down|left|right)  back()  home()
    open_app("name")  done("answer")

``i`` numbers the elements shown to the model (1 = the one ranked most relevant). ``swipe(up)``
moves the finger up: the list shows what is further down.
"""
from __future__ import annotations

import base64
import re
import shlex
from dataclasses import dataclass

from .screen import Element, Screen

DIRECTIONS = ("up", "down", "left", "right")
TEXT_CHARS = 60          # longest text ``type`` may write
ANSWER_CHARS = 100
ACTION = re.compile(r'^\s*(?P<name>[a-z_]+)\((?P<args>.*)\)\s*$', re.S)
PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")

# App names a model may open, with the packages they have on Pixel and AOSP phones, first found wins.
APPS: dict[str, tuple[str, ...]] = {
    "Settings": ("com.android.settings",),
    "Clock": ("com.google.android.deskclock", "com.android.deskclock"),
    "Contacts": ("com.google.android.contacts", "com.android.contacts"),
    "Messages": ("com.google.android.apps.messaging", "com.android.messaging"),
    "Phone": ("com.google.android.dialer", "com.android.dialer"),
    "Chrome": ("com.android.chrome",),
    "Camera": ("com.google.android.GoogleCamera", "com.android.camera2"),
    "Photos": ("com.google.android.apps.photos",),
    "Calendar": ("com.google.android.calendar", "com.android.calendar"),
    "Files": ("com.google.android.apps.nbu.files", "com.android.documentsui"),
}


class ActionError(Exception):
    """An action that cannot be performed as written (one line, shown to the user)."""


@dataclass(frozen=True)
class Action:
    name: str
    index: int = 0            # tap / long_press / type: the element's number
    text: str = ""            # type: the text; open_app: the app; done: the answer; swipe: direction

    def __str__(self) -> str:
        if self.name in ("tap", "long_press"):
            return f"{self.name}({self.index})"
        if self.name == "type":
            return f'type({self.index}, "{self.text}")'
        if self.name == "swipe":
            return f"swipe({self.text})"
        if self.name in ("open_app", "done"):
            return f'{self.name}("{self.text}")'
        return f"{self.name}()"


def parse(text: str) -> Action:
    """The action in a model's output; ``ActionError`` for anything else."""
    m = ACTION.match(text or "")
    if not m:
        raise ActionError(f"not an action: {text.strip()[:60]!r}")
    name, args = m["name"], m["args"].strip()
    if name in ("back", "home") and not args:
        return Action(name)
    if name in ("tap", "long_press") and args.isdigit():
        return Action(name, int(args))
    if name == "swipe" and args in DIRECTIONS:
        return Action(name, text=args)
    q = re.fullmatch(r'"([^"\n]*)"', args)
    if name in ("open_app", "done") and q:
        return Action(name, text=q[1])
    t = re.fullmatch(r'(\d+),\s*"([^"\n]*)"', args)
    if name == "type" and t:
        return Action(name, int(t[1]), t[2])
    raise ActionError(f"not an action: {text.strip()[:60]!r}")


def grammar_alternatives(shown: list[Element], screen: Screen, apps: list[str]) -> list[list]:
    """Every action valid on this screen, as alternatives of ``engine.decoding.grammar.Grammar``:
    only the elements that take a tap get ``tap``, only text fields ``type``..."""
    from engine.decoding.grammar import Free

    alts: list[list] = []
    for i, e in enumerate(shown, 1):
        if e.clickable or e.checkable or e.editable:
            alts.append([f"tap({i})"])
        if e.long_clickable:
            alts.append([f"long_press({i})"])
        if e.editable:
            alts.append([f'type({i}, "', Free(TEXT_CHARS, exclude='"\n'), '")'])
    if screen.scrollable:
        alts += [[f"swipe({d})"] for d in DIRECTIONS]
    alts += [["back()"], ["home()"]]
    alts += [[f'open_app("{name}")'] for name in apps]
    alts.append(['done("', Free(ANSWER_CHARS, exclude='"\n'), '")'])
    return alts


def check(action: Action, shown: list[Element], screen: Screen, apps: list[str]) -> None:
    """``ActionError`` unless ``action`` is valid here (the constraint makes this hold for the
    model's output; a user's or a replayed action is checked the same way)."""
    if action.name in ("tap", "long_press", "type"):
        if not 1 <= action.index <= len(shown):
            raise ActionError(f"{action}: there is no element {action.index} on this screen")
        e = shown[action.index - 1]
        ok = {"tap": e.clickable or e.checkable or e.editable, "long_press": e.long_clickable,
              "type": e.editable}[action.name]
        if not ok:
            raise ActionError(f"{action}: element {action.index} ({e.label}) does not take that")
    elif action.name == "swipe" and not screen.scrollable:
        raise ActionError(f"{action}: nothing scrolls on this screen")
    elif action.name == "open_app" and action.text not in apps:
        raise ActionError(f"{action}: no app called {action.text!r} on this phone")


def text_command(text: str, adb_keyboard: bool = False) -> str:
    """The shell command that types ``text``. ``input text`` only types printable ASCII and turns
    "%s" into a space, so other text goes through ADBKeyboard when it is installed, and is
    refused with the reason otherwise (typing something else than asked is worse)."""
    if PRINTABLE_ASCII.fullmatch(text) and "%s" not in text:
        # one argument, single-quoted: `;`, `&&`, `$(…)`, backticks are characters to type
        return "input text " + shlex.quote(text)
    if adb_keyboard:
        b64 = base64.b64encode(text.encode("utf-8")).decode("ascii")
        return f"am broadcast -a ADB_INPUT_B64 --es msg {b64}"
    bad = "%s" if "%s" in text else next(c for c in text if not PRINTABLE_ASCII.fullmatch(c))
    raise ActionError(f"cannot type {bad!r}: `input text` only types printable ASCII (and reads "
                      f"%s as a space); install ADBKeyboard on the phone to type any text")


def swipe_command(direction: str, screen: Screen) -> str:
    """A 300 ms drag across the main scrolling area (or the middle of the screen)."""
    if screen.scrollable:
        x1, y1, x2, y2 = screen.scrollable[0].bounds
    else:
        w, h = screen.size
        x1, y1, x2, y2 = 0, h // 4, w, h * 3 // 4
    cx, cy = (x1 + x2) // 2, (y1 + y2) // 2
    dx, dy = (x2 - x1) * 3 // 10, (y2 - y1) * 3 // 10
    start, end = {"up": ((cx, cy + dy), (cx, cy - dy)), "down": ((cx, cy - dy), (cx, cy + dy)),
                  "left": ((cx + dx, cy), (cx - dx, cy)), "right": ((cx - dx, cy), (cx + dx, cy))}[direction]
    return f"input swipe {start[0]} {start[1]} {end[0]} {end[1]} 300"
