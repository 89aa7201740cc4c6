"""Helpers for the command-line tests of the agent and the phone (a module, not conftest.py: two
conftest.py files cannot both be imported by name): a user's folders of their own, the virtual
phone served over real TCP adb in this process (or the same server answering as a real phone
does), and ``hexa`` run through ``app.cli.main``."""
from __future__ import annotations

import pytest

from app.cli import main


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A user of their own: config, data and logs under tmp_path."""
    for name in ("CONFIG", "DATA", "LOG"):
        monkeypatch.setenv(f"HEXA_{name}_DIR", str(tmp_path / name.lower()))
    return tmp_path


def serve(tmp_path, real: bool = False):
    from agents.phone.device.phone import VirtualPhone
    from agents.phone.adb.server import PhoneServer

    phone = VirtualPhone()
    server = PhoneServer(phone, host="127.0.0.1", port=0, auth=False, keys_file=tmp_path / "phone-keys")
    if real:     # a real phone's shell has no `hexa-phone`: "inaccessible or not found"
        del server.shell.commands["hexa-phone"]
    port = server.start()
    return phone, server, f"127.0.0.1:{port}"


@pytest.fixture
def phone(tmp_path):
    phone, server, address = serve(tmp_path)
    yield phone, address
    server.stop()


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hexa: ") and "Traceback" not in err, err
    return lines[0]


def graphs(home) -> dict[str, dict]:
    from memory import Memory

    with Memory.open(home / "data") as memory:
        return {r["package"]: r for r in memory.ui_graphs.apps()}
