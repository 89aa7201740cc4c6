"""A virtual phone served over real TCP (the real adb transport) and hexa's client connected to it."""
from __future__ import annotations

import pytest


@pytest.fixture
def phone_server(tmp_path):
    from agents.phone.device.phone import VirtualPhone
    from agents.phone.adb.server import PhoneServer

    phone = VirtualPhone()
    server = PhoneServer(phone, host="127.0.0.1", port=0, auth=True,
                         keys_file=tmp_path / "phone" / "adb_keys", accept_new_keys=True)
    port = server.start()
    yield phone, server, port
    server.stop()


@pytest.fixture
def device(phone_server, tmp_path):
    from agents.ui.adb import AdbConnection
    from agents.ui.device import Device

    _, _, port = phone_server
    dev = Device(AdbConnection(f"127.0.0.1:{port}", tmp_path / "keys", timeout_s=5.0, auth_timeout_s=5.0))
    dev.connect()
    yield dev
    dev.close()
