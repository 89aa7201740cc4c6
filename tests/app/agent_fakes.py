"""A scripted phone for the agent mode's tests: a Settings screen with a Bluetooth switch, a Wi-Fi
row and a "Delete all messages" button (sensitive: the agent asks first). The real UIAgent
drives it like a phone (observe, perform). The real phone path is tested too
(test_tui_agent_phone.py): this one is for fixed rendering (the snapshot) and the confirmation."""
from __future__ import annotations

from agents.ui.screen import Element, Screen

SETTINGS = "com.android.settings"


class FakeDevice:
    address = "127.0.0.1:5555"
    model = "Pixel 7"
    size = (1080, 2400)
    apps = {"Settings": SETTINGS}

    def __init__(self):
        self.bluetooth, self.wifi, self.deleted = True, False, False
        self.commands: list[str] = []
        self.closed = False

    def observe(self) -> Screen:
        rows = [
            Element(text="Bluetooth", rid="bluetooth", cls="LinearLayout", bounds=(0, 400, 1080, 568),
                    clickable=True, checkable=True, checked=self.bluetooth, details=["Bluetooth"]),
            Element(text="Wi-Fi", rid="wifi", cls="LinearLayout", bounds=(0, 568, 1080, 736),
                    clickable=True, checkable=True, checked=self.wifi),
            Element(text="Search settings", rid="search", cls="EditText", bounds=(63, 160, 1017, 307),
                    clickable=True, editable=True),
            Element(text="Delete all messages" if not self.deleted else "Messages deleted", rid="delete",
                    cls="Button", bounds=(63, 2100, 1017, 2247), clickable=True),
        ]
        return Screen(rows, ["Connected devices"], [], package=SETTINGS, activity=".Settings",
                      size=self.size)

    @property
    def state(self) -> dict:
        return {"bluetooth": self.bluetooth, "wifi": self.wifi, "deleted": self.deleted}

    def perform(self, action, shown, screen) -> str:
        e = shown[action.index - 1] if action.index else None
        if e is not None and e.rid == "bluetooth":
            self.bluetooth = not self.bluetooth
        elif e is not None and e.rid == "wifi":
            self.wifi = not self.wifi
        elif e is not None and e.rid == "delete":
            self.deleted = True
        x, y = e.center if e is not None else (0, 0)
        command = f"input tap {x} {y}"
        self.commands.append(command)
        return command

    def virtual_state(self):
        return self.state

    def close(self) -> None:
        self.closed = True
