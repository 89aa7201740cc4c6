"""The virtual phone: an Android device emulated well enough for an adb client and a UI agent.

Two independent halves meet at the ``Phone`` protocol below:
- the transport (``server.py``: adb's wire protocol over TCP, ``shell.py``: the device's ``sh``
  and the commands an agent uses) knows nothing of apps;
- the device model (``device.py`` and the app definitions under ``assets/phone/``) knows nothing
  of adb: it holds the state, draws the current screen as uiautomator XML and reacts to input.

The agent side (``agents/ui/``) never imports this package: it talks adb, to this phone or a real one.
"""
from __future__ import annotations

import threading
from typing import Protocol


class NotIdle(Exception):
    """The screen did not settle (an animation): ``uiautomator dump`` prints
    "ERROR: could not get idle state." like a real phone does."""


class Phone(Protocol):
    """What the shell needs from a device. All methods are called under ``lock``. A device may also
    have ``fs`` (a ``vfs.FileSystem``): its storage, which the shell then shares, so files its apps
    save are what ``ls`` and ``cat`` show; without one the shell keeps its own."""
    lock: threading.RLock

    def screen_size(self) -> tuple[int, int]:
        """Physical size in pixels (width, height), as ``wm size`` reports it."""

    def dump_ui(self) -> str:
        """The current screen as uiautomator XML (``<?xml …?><hierarchy rotation="0">…``).
        May raise ``NotIdle``."""

    def tap(self, x: int, y: int) -> None: ...

    def long_press(self, x: int, y: int) -> None: ...

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int) -> None:
        """A fling/drag; scrolls the list under (x1, y1) (a short distance may do nothing)."""

    def key(self, keycode: str) -> bool:
        """A key by name (``KEYCODE_BACK``, ``KEYCODE_HOME``, ``KEYCODE_ENTER``, ``KEYCODE_DEL``, …).
        False for a name the device does not know."""

    def type_text(self, text: str) -> None:
        """Text typed into the focused editable field (nothing happens without one)."""

    def launch(self, package: str, activity: str | None = None) -> bool:
        """Start an app (its launcher activity when ``activity`` is None); False if not installed
        (or, with an activity, if the package has no such activity)."""

    def focus(self) -> tuple[str, str]:
        """(package, activity) of the window in front."""

    def packages(self) -> list[str]:
        """Installed packages (``pm list packages``)."""

    def launcher_activity(self, package: str) -> str | None: ...

    def properties(self) -> dict[str, str]:
        """``getprop``: ro.product.model, ro.build.version.release, ro.build.version.sdk, …"""

    def state(self) -> dict:
        """The whole device state as JSON-ready data (what task checks read)."""

    def reset(self, setup: dict | None = None) -> None:
        """Back to the fresh state (home screen, default settings and data), then ``setup``
        (dotted paths or nested dicts -> values: a task's start state)."""
