"""The phone the agent mode drives: a phone's adbd at HOST:PORT, or a virtual phone started in
this process on a free port. Connecting blocks (a phone may wait for its user to allow our key),
so these run on a thread; the screen gets the result as a message."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from app.locations import ensure

TIMEOUT_S = 10.0          # one adb call
AUTH_TIMEOUT_S = 60.0     # the phone's user reading "Allow USB debugging?"
LOCALHOST = "127.0.0.1"


@dataclass
class Connected:
    device: Any                 # agents.ui.device.Device
    virtual: bool               # hexa's virtual phone (no settling time after an action)
    screen: Any = None          # what it showed when we connected (the phone panel's first view)

    def describe(self) -> str:
        d = self.device
        what = ", ".join(x for x in (d.model or "", f"{d.size[0]}×{d.size[1]}",
                                     "virtual phone" if self.virtual else "") if x)
        return f"{d.address} ({what})"


class DeviceLink:
    def __init__(self, locs: Any):
        self.locs = locs
        self.server = None          # the in-process virtual phone's adb server
        self.phone = None           # its VirtualPhone (tests read its state)
        self.address = ""
        self.current: Connected | None = None

    @property
    def device(self):
        return self.current.device if self.current is not None else None

    def connect(self, address: str, on_auth: Callable[[], None] | None = None) -> Connected:
        """Thread: connect to ``address``; ``DeviceError`` (one line) when it cannot."""
        from agents.ui.adb import AdbConnection
        from agents.ui.device import Device

        from ..phone_agent import is_virtual

        device = Device(AdbConnection(address, self.locs.adb_keys, timeout_s=TIMEOUT_S,
                                      auth_timeout_s=AUTH_TIMEOUT_S, on_auth=on_auth))
        try:
            device.connect()
            virtual = is_virtual(device)     # the app's knowledge, never the agent's
        except Exception:
            device.close()
            raise
        return Connected(device, virtual, first_look(device))

    def start_virtual(self, on_auth: Callable[[], None] | None = None) -> Connected:
        """Thread: start the virtual phone (once; later calls reuse it) and connect to it. Its key
        store is the real phone_dir's: the first connection asks, as a phone would, and it
        accepts on its own."""
        if self.server is None:
            from agents.phone.device.phone import VirtualPhone
            from agents.phone.adb.server import PhoneServer

            phone = VirtualPhone()
            server = PhoneServer(phone, host=LOCALHOST, port=0, auth=True,
                                 keys_file=ensure(self.locs.phone_dir) / "adb_keys", accept_new_keys=True)
            port = server.start()
            self.server, self.phone, self.address = server, phone, f"{LOCALHOST}:{port}"
        return self.connect(self.address, on_auth)

    def use(self, connected: Connected) -> None:
        """UI thread: the new device replaces the old one."""
        old, self.current = self.current, connected
        if old is not None and old.device is not connected.device:
            old.device.close()

    def close(self) -> None:
        current, self.current = self.current, None
        if current is not None:
            _quietly(current.device.close)
        server, self.server, self.phone = self.server, None, None
        if server is not None:
            _quietly(server.stop)


def first_look(device) -> Any:
    """The screen now, for the panel; None if it cannot be read yet (the agent will say why)."""
    try:
        return device.observe()
    except Exception:
        return None


def _quietly(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:
        pass
