"""The benchmark's hold on the phone: read the virtual phone's whole state, reset it to a task's start.

These go through the virtual phone's own shell command ``hexa-phone`` (``state`` prints the state
as one JSON line, ``reset ['<json setup>']`` starts it afresh); a real phone answers "not found".
This module is the only place outside the virtual phone and the tests that runs ``hexa-phone``:
the agent never learns the state it is judged on.
"""
from __future__ import annotations

import json
import shlex

from agents.ui.adb import AdbConnection, DeviceError


class PhoneControl:
    """State and reset of hexa's virtual phone over an adb connection."""

    def __init__(self, conn: AdbConnection):
        self.conn = conn

    @property
    def address(self) -> str:
        return getattr(self.conn, "address", "the phone")

    def is_virtual(self) -> bool:
        """Whether the phone answers ``hexa-phone state`` with its state (False on a real phone)."""
        try:
            self.state()
        except DeviceError as exc:
            if "is not hexa's virtual phone" in str(exc):
                return False
            raise
        return True

    def state(self) -> dict:
        """The whole state (``VirtualPhone.state()``): apps, ``foreground``, ``visited``, ``files``."""
        answer = self.conn.shell("hexa-phone state")
        try:
            state = json.loads(answer)
        except ValueError:
            state = None
        if not isinstance(state, dict):
            raise DeviceError(f"{self.address} is not hexa's virtual phone: "
                              f"`hexa-phone state` answered {_first_line(answer)}")
        return state

    def reset(self, setup: dict | None = None) -> None:
        """The fresh phone, then ``setup`` ({dotted path: value}) applied to it: a task's start."""
        command = "hexa-phone reset"
        if setup:
            command += " " + shlex.quote(json.dumps(setup, ensure_ascii=False))
        answer = self.conn.shell(command)
        if not answer.strip():  # a reset prints nothing
            return
        if "not found" in answer:
            raise DeviceError(f"{self.address} is not hexa's virtual phone: "
                              f"`hexa-phone reset` answered {_first_line(answer)}")
        raise DeviceError(f"{self.address} refused the reset: {_first_line(answer)}")


def _first_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    if not lines:
        return "nothing"
    line = lines[0]
    return repr(line if len(line) <= 100 else line[:97] + "...")
