"""A small test double of the ``Phone`` protocol: a launcher and a few apps, one text field,
and a log of every input it receives, so transport and shell tests can check what reached
the device. (The real device model lives in agents/phone/device/phone.py.)"""
from __future__ import annotations

import threading

from agents.phone import NotIdle

LAUNCHER = ("com.android.launcher3", "com.android.launcher3.uioverride.QuickstepLauncher")
APPS = {
    "com.android.settings": ["com.android.settings.Settings", "com.android.settings.SubSettings"],
    "com.example.notes": ["com.example.notes.MainActivity", "com.example.notes.EditActivity"],
    "com.android.launcher3": [LAUNCHER[1]],
}
PROPS = {
    "ro.product.name": "hexa_phone", "ro.product.model": "Hexa Virtual Phone",
    "ro.product.device": "hexa", "ro.product.manufacturer": "Hexa",
    "ro.build.version.release": "14", "ro.build.version.sdk": "34", "ro.sf.lcd_density": "420",
}
KNOWN_KEYS = {"KEYCODE_HOME", "KEYCODE_BACK", "KEYCODE_ENTER", "KEYCODE_DEL", "KEYCODE_MENU",
              "KEYCODE_APP_SWITCH", "KEYCODE_VOLUME_UP", "KEYCODE_VOLUME_DOWN", "KEYCODE_A"}


class FakePhone:
    def __init__(self):
        self.lock = threading.RLock()
        self.reset()

    def reset(self, setup=None) -> None:
        self.events: list[tuple] = []
        self.stack: list[tuple[str, str]] = [LAUNCHER]
        self.field = ""
        self.not_idle = 0           # the next N dumps raise NotIdle
        self.resets = getattr(self, "resets", -1) + 1

    def screen_size(self) -> tuple[int, int]:
        return 1080, 2400

    def dump_ui(self) -> str:
        if self.not_idle:
            self.not_idle -= 1
            raise NotIdle()
        package, activity = self.focus()
        return ('<?xml version=\'1.0\' encoding=\'UTF-8\' standalone=\'yes\' ?><hierarchy rotation="0">'
                f'<node index="0" text="{self.field}" class="android.widget.EditText" package="{package}" '
                f'resource-id="{activity}" bounds="[0,0][1080,2400]" /></hierarchy>')

    def tap(self, x: int, y: int) -> None:
        self.events.append(("tap", x, y))

    def long_press(self, x: int, y: int) -> None:
        self.events.append(("long_press", x, y))

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int) -> None:
        self.events.append(("swipe", x1, y1, x2, y2, duration_ms))

    def key(self, keycode: str) -> bool:
        self.events.append(("key", keycode))
        if keycode == "KEYCODE_HOME":
            self.stack = [LAUNCHER]
        elif keycode == "KEYCODE_BACK" and len(self.stack) > 1:
            self.stack.pop()
        return keycode in KNOWN_KEYS

    def type_text(self, text: str) -> None:
        self.events.append(("text", text))
        self.field += text

    def launch(self, package: str, activity: str | None = None) -> bool:
        activities = APPS.get(package)
        if not activities or (activity is not None and activity not in activities):
            return False
        self.stack.append((package, activity or activities[0]))
        self.events.append(("launch", package, activity))
        return True

    def focus(self) -> tuple[str, str]:
        return self.stack[-1]

    def packages(self) -> list[str]:
        return list(APPS)

    def launcher_activity(self, package: str) -> str | None:
        return APPS[package][0] if package in APPS else None

    def properties(self) -> dict[str, str]:
        return dict(PROPS)

    def state(self) -> dict:
        return {"focus": list(self.focus()), "field": self.field, "events": len(self.events)}
