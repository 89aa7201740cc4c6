"""A scripted phone for the agent mode's tests: a Settings screen with a Bluetooth switch, a Wi-Fi
row, a search field and a "Delete all messages" button (sensitive: the agent asks first). It has
the calls of ``agents.ui.device.Device`` the agent uses (observe, tap, long_press, type_into, key,
swipe, launch) and answers them as a phone would. The real phone path (the virtual phone over
TCP) is tested too (test_tui_agent_phone.py): this one is for fixed rendering (the snapshot) and
the confirmation."""
from __future__ import annotations

from agents.ui.screen import Element, Screen

SETTINGS = "com.android.settings"


class FakeDevice:
    address = "127.0.0.1:5555"
    model = "Pixel 7"
    size = (1080, 2400)
    apps = {"Settings": SETTINGS}
    conn = None

    def __init__(self):
        self.bluetooth, self.wifi, self.deleted = True, False, False
        self.search = ""
        self.commands: list[str] = []
        self.closed = False

    def observe(self) -> Screen:
        rows = [
            Element(text="Bluetooth", rid="bluetooth", cls="LinearLayout", bounds=(0, 400, 1080, 568),
                    clickable=True, checkable=True, checked=self.bluetooth, details=["Bluetooth"]),
            Element(text="Wi-Fi", rid="wifi", cls="LinearLayout", bounds=(0, 568, 1080, 736),
                    clickable=True, checkable=True, checked=self.wifi),
            Element(text=self.search or "Search settings", rid="search", cls="EditText",
                    bounds=(63, 160, 1017, 307), clickable=True, editable=True),
            Element(text="Delete all messages" if not self.deleted else "Messages deleted", rid="delete",
                    cls="Button", bounds=(63, 2100, 1017, 2247), clickable=True),
        ]
        return Screen(rows, ["Connected devices"], [], package=SETTINGS, activity=".Settings",
                      size=self.size)

    @property
    def state(self) -> dict:
        return {"bluetooth": self.bluetooth, "wifi": self.wifi, "deleted": self.deleted}

    def _run(self, command: str) -> str:
        self.commands.append(command)
        return command

    def tap(self, e: Element) -> str:
        if e.rid == "bluetooth":
            self.bluetooth = not self.bluetooth
        elif e.rid == "wifi":
            self.wifi = not self.wifi
        elif e.rid == "delete":
            self.deleted = True
        x, y = e.center
        return self._run(f"input tap {x} {y}")

    def long_press(self, e: Element) -> str:
        x, y = e.center
        return self._run(f"input swipe {x} {y} {x} {y} 1000")

    def type_into(self, e: Element, text: str, clear: bool = True) -> str:
        if e.rid == "search":
            self.search = text
        return self._run(f"input text {text!r}")

    def key(self, name: str) -> str:
        return self._run(f"input keyevent {name}")

    def swipe(self, direction: str, screen: Screen) -> str:
        return self._run(f"input swipe {direction}")

    def launch(self, package: str, fresh: bool = False) -> str:
        return self._run(f"monkey -p {package}")

    def close(self) -> None:
        self.closed = True
