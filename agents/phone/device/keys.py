"""Android key codes the device understands (``input keyevent`` takes a name or its number)."""
from __future__ import annotations

import string

from .keycodes import BY_NAME

# the keys the device model acts on (BACK, HOME, text editing, typing); codes from the one table
_HANDLED = ("HOME BACK CALL ENDCALL DPAD_UP DPAD_DOWN DPAD_LEFT DPAD_RIGHT DPAD_CENTER VOLUME_UP "
            "VOLUME_DOWN POWER CAMERA COMMA PERIOD TAB SPACE ENTER DEL MINUS EQUALS AT MENU SEARCH "
            "MEDIA_PLAY_PAUSE PAGE_UP PAGE_DOWN ESCAPE FORWARD_DEL MOVE_HOME MOVE_END VOLUME_MUTE "
            "APP_SWITCH SLEEP WAKEUP").split() + list(string.digits) + list(string.ascii_uppercase)
_NAMED = {name: BY_NAME["KEYCODE_" + name] for name in _HANDLED}

_BY_CODE = {code: name for name, code in _NAMED.items()}


def lookup(keycode: str | int) -> str | None:
    """Canonical name of ``KEYCODE_BACK``, ``BACK`` or ``4``; None for an unknown key."""
    text = str(keycode).strip().upper()
    if text.startswith("KEYCODE_"):
        return text[8:] if text[8:] in _NAMED else None
    if text.isdigit():
        return _BY_CODE.get(int(text))
    return text if text in _NAMED and len(text) > 1 else None


_CHARS = {"SPACE": " ", "COMMA": ",", "PERIOD": ".", "MINUS": "-", "EQUALS": "=", "AT": "@"}


def char_of(name: str) -> str:
    """The character a key types, or '' (letters type lowercase, as without shift)."""
    if len(name) == 1:
        return name.lower()
    return _CHARS.get(name, "")
