"""PhoneControl: the virtual phone's state and reset over a real adb connection (TCP, with auth),
and the one-line errors when the phone on the other end is not hexa's virtual phone."""
from __future__ import annotations

import pytest

from agents.harness.control import PhoneControl
from agents.phone.device.phone import VirtualPhone
from agents.phone.adb.server import PhoneServer
from agents.ui.adb import AdbConnection, DeviceError

REAL_PHONE = "/system/bin/sh: hexa-phone: inaccessible or not found\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    phone = VirtualPhone()
    server = PhoneServer(phone, host="127.0.0.1", port=0, auth=True, keys_file=folder / "adb_keys",
                         accept_new_keys=True)
    port = server.start()
    conn = AdbConnection(f"127.0.0.1:{port}", folder / "keys", timeout_s=5.0, auth_timeout_s=5.0)
    yield phone, PhoneControl(conn)
    conn.close()
    server.stop()


class Answers:
    """A connection whose phone answers every command with the same text (or raises)."""

    def __init__(self, answer: str = "", error: Exception | None = None):
        self.address, self.answer, self.error, self.commands = "10.0.0.7:5555", answer, error, []

    def shell(self, command: str) -> str:
        self.commands.append(command)
        if self.error:
            raise self.error
        return self.answer


def test_the_state_over_adb_is_the_phones_state(served):
    phone, control = served
    control.reset()
    assert control.is_virtual()
    assert control.state() == phone.state()


def test_reset_applies_a_setup_with_quotes_and_unicode_then_a_plain_reset_is_fresh(served):
    phone, control = served
    setup = {"settings.device_name": "Maya's \"Pixel\" $HOME `id`", "clock.alarms": [],
             "settings.languages": ["English (United States)", "Español (México)", "日本語"]}
    control.reset(setup)
    for state in (control.state(), phone.state()):
        assert state["settings"]["device_name"] == setup["settings.device_name"]
        assert state["settings"]["languages"] == setup["settings.languages"]
        assert state["clock"]["alarms"] == []
    control.reset()
    assert control.state()["settings"]["device_name"] == "Pixel 7"
    assert len(control.state()["clock"]["alarms"]) == 2


def test_reset_forgets_what_was_done_on_the_screen(served):
    phone, control = served
    control.reset()
    phone.launch("com.android.settings")
    assert control.state()["foreground"]["package"] == "com.android.settings"
    control.reset()
    assert control.state()["foreground"]["screen"] == "launcher:home"
    assert control.state()["visited"] == ["launcher:home"]


def test_a_real_phone_is_not_virtual_and_says_so_in_one_line():
    control = PhoneControl(Answers(REAL_PHONE))
    assert control.is_virtual() is False
    for call in (control.state, control.reset, lambda: control.reset({"settings.wifi": False})):
        with pytest.raises(DeviceError) as error:
            call()
        message = str(error.value)
        assert message.startswith("10.0.0.7:5555 is not hexa's virtual phone: ") and "not found" in message
        assert "\n" not in message


def test_an_answer_that_is_not_a_state_is_not_virtual():
    assert PhoneControl(Answers("[1, 2]\n")).is_virtual() is False
    assert PhoneControl(Answers("")).is_virtual() is False


def test_a_refused_reset_is_reported_as_such():
    control = PhoneControl(Answers("hexa-phone: reset takes a JSON object of path -> value\n"))
    with pytest.raises(DeviceError, match=r"^10\.0\.0\.7:5555 refused the reset: 'hexa-phone: reset takes"):
        control.reset({"settings.wifi": False})


def test_the_setup_reaches_the_shell_as_one_quoted_word():
    conn = Answers("")
    PhoneControl(conn).reset({"settings.device_name": "it's"})
    assert conn.commands == ["hexa-phone reset '{\"settings.device_name\": \"it'\"'\"'s\"}'"]


def test_a_dead_connection_is_not_mistaken_for_a_real_phone():
    control = PhoneControl(Answers(error=DeviceError("10.0.0.7:5555 stopped answering (timed out)")))
    with pytest.raises(DeviceError, match="stopped answering"):
        control.is_virtual()
