"""Android key codes the device understands (``input keyevent`` takes a name or its number)."""
from __future__ import annotations

import string

_NAMED = {
    "HOME": 3, "BACK": 4, "CALL": 5, "ENDCALL": 6, "DPAD_UP": 19, "DPAD_DOWN": 20, "DPAD_LEFT": 21,
    "DPAD_RIGHT": 22, "DPAD_CENTER": 23, "VOLUME_UP": 24, "VOLUME_DOWN": 25, "POWER": 26, "CAMERA": 27,
    "COMMA": 55, "PERIOD": 56, "TAB": 61, "SPACE": 62, "ENTER": 66, "DEL": 67, "MINUS": 69, "EQUALS": 70,
    "AT": 77, "MENU": 82, "SEARCH": 84, "MEDIA_PLAY_PAUSE": 85, "PAGE_UP": 92, "PAGE_DOWN": 93,
    "ESCAPE": 111, "FORWARD_DEL": 112, "MOVE_HOME": 122, "MOVE_END": 123, "VOLUME_MUTE": 164,
    "APP_SWITCH": 187, "SLEEP": 223, "WAKEUP": 224,
}
_NAMED.update({str(d): 7 + d for d in range(10)})
_NAMED.update({c: 29 + i for i, c in enumerate(string.ascii_uppercase)})

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
