"""The virtual phone's adb transport over real TCP: the adb-shell client (and the real adb binary
when installed) against PhoneServer, plus a raw client for what a polite client never does."""
from __future__ import annotations

import os
import select
import shutil
import socket
import struct
import subprocess
import threading
import time

import pytest
from adb_shell.adb_device import AdbDeviceTcp
from adb_shell.auth.keygen import keygen
from adb_shell.auth.sign_pythonrsa import PythonRSASigner
from support.fake_phone import FakePhone

from agents.phone.adb import wire
from agents.phone.adb.auth_keys import KeyStore, decode_pubkey, verify_token
from agents.phone.adb.server import PhoneServer

BANNER = (b"device::ro.product.name=hexa_phone;ro.product.model=Hexa Virtual Phone;"
          b"ro.product.device=hexa;features=")


@pytest.fixture(scope="module")
def signers(tmp_path_factory):
    """Two adb key pairs (key generation is the slow part: once per module)."""
    folder = tmp_path_factory.mktemp("keys")
    out = []
    for name in ("one", "two"):
        keygen(str(folder / name))
        out.append(PythonRSASigner.FromRSAKeyPath(str(folder / name)))
    return out


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(**options) -> PhoneServer:
        options.setdefault("auth", False)
        server = PhoneServer(FakePhone(), port=0, **options)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def client(server: PhoneServer, keys=None, auth_timeout_s: float = 2.0) -> AdbDeviceTcp:
    device = AdbDeviceTcp("127.0.0.1", server.port, default_transport_timeout_s=2)
    device.connect(rsa_keys=keys, auth_timeout_s=auth_timeout_s)
    return device


def eventually(condition, timeout: float = 3.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


class Raw:
    """A hand-driven adb client: sends exactly the bytes a test asks for."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=3)

    def send(self, command: int, arg0: int, arg1: int, data: bytes = b"", check: int | None = None):
        check = wire.checksum(data) if check is None else check
        self.sock.sendall(wire.HEADER.pack(command, arg0, arg1, len(data), check, command ^ 0xFFFFFFFF) + data)

    def recv(self) -> wire.Message:
        return wire.read_message(self.sock, idle_timeout=3, part_timeout=3, strict_checksum=True)

    def connect(self, version: int = wire.VERSION_SKIP_CHECKSUM, maxdata: int = 4096) -> wire.Message:
        self.send(wire.CNXN, version, maxdata, b"host::\0")
        return self.recv()

    def quiet(self, seconds: float = 0.2) -> bool:
        return not select.select([self.sock], [], [], seconds)[0]

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def drain(self, local_id: int) -> bytes:
        """Acknowledge each WRTE of a stream until its CLSE; the bytes written."""
        out = b""
        while True:
            msg = self.recv()
            if msg.command == wire.CLSE:
                return out
            assert msg.command == wire.WRTE and msg.arg1 == local_id
            out += msg.data
            self.send(wire.OKAY, local_id, msg.arg0)


# -- the codec and the keys -------------------------------------------------------------------
def test_message_codec_survives_partial_reads_and_rejects_bad_framing():
    a, b = socket.socketpair()
    packed = wire.pack(wire.WRTE, 7, 9, b"payload")
    for byte in packed:                    # one byte at a time
        a.send(bytes([byte]))
    msg = wire.read_message(b, idle_timeout=1, part_timeout=1)
    assert (msg.name, msg.arg0, msg.arg1, msg.data) == ("WRTE", 7, 9, b"payload")
    bad = [packed[:20] + b"XXXX" + packed[24:],                                       # magic
           wire.HEADER.pack(wire.WRTE, 0, 0, wire.MAX_PAYLOAD + 1, 0, wire.WRTE ^ 0xFFFFFFFF),
           wire.HEADER.pack(wire.OKAY, 0, 0, 1, 5, wire.OKAY ^ 0xFFFFFFFF) + b"x",    # checksum
           wire.HEADER.pack(0x12345678, 0, 0, 0, 0, 0x12345678 ^ 0xFFFFFFFF)]         # command
    for frame in bad:   # after a framing error the stream is lost: a fresh pair each time
        c, d = socket.socketpair()
        c.send(frame)
        with pytest.raises(wire.ProtocolError):
            wire.read_message(d, idle_timeout=1, part_timeout=1)
    zero = wire.HEADER.pack(wire.OKAY, 0, 0, 1, 0, wire.OKAY ^ 0xFFFFFFFF) + b"x"
    a.send(zero + zero)
    assert wire.read_message(b, idle_timeout=1, part_timeout=1).data == b"x"
    with pytest.raises(wire.ProtocolError):
        wire.read_message(b, idle_timeout=1, part_timeout=1, strict_checksum=True)
    a.send(packed[:10])
    a.close()
    with pytest.raises(wire.PeerClosed):
        wire.read_message(b, idle_timeout=1, part_timeout=1)


def test_android_public_keys(signers, tmp_path):
    key = decode_pubkey(signers[0].GetPublicKey())
    token = os.urandom(20)
    assert verify_token(key, token, signers[0].Sign(token))
    assert not verify_token(key, token, signers[1].Sign(token))
    assert not verify_token(key, os.urandom(20), signers[0].Sign(token))
    for bad in ("", "not base64!", "QUJD user@host"):
        with pytest.raises(ValueError):
            decode_pubkey(bad)
    store = KeyStore(tmp_path / "misc" / "adb_keys")
    assert not store.add(b"garbage\0") and store.keys() == []
    assert store.add(signers[0].GetPublicKey().encode() + b"\0")
    assert store.add(signers[0].GetPublicKey().encode() + b"\0")      # no duplicate line
    assert (tmp_path / "misc" / "adb_keys").read_text() == signers[0].GetPublicKey() + "\n"
    assert store.verify(token, signers[0].Sign(token)) and not store.verify(token, signers[1].Sign(token))


# -- handshake ---------------------------------------------------------------------------------
def test_handshake_without_auth_and_the_banner(serve):
    server = serve()
    raw = Raw(server.port)
    reply = raw.connect(maxdata=1 << 20)
    assert (reply.name, reply.arg0, reply.arg1, reply.data) == ("CNXN", wire.VERSION, wire.MAX_PAYLOAD, BANNER)
    assert Raw(server.port).connect(maxdata=4096).arg1 == 4096
    device = client(server)
    assert device.shell("echo hi") == "hi\n"


def test_auth_with_a_known_key_uses_the_signature(serve, signers, tmp_path):
    keys = tmp_path / "adb_keys"
    keys.write_text(signers[1].GetPublicKey() + "\n")
    server = serve(auth=True, keys_file=keys, accept_new_keys=False)
    # the unknown key's signature fails, the server sends a fresh token, the known key's succeeds
    assert client(server, [signers[0], signers[1]]).shell("echo ok") == "ok\n"
    assert keys.read_text() == signers[1].GetPublicKey() + "\n"


def test_a_failed_signature_gets_a_fresh_token(serve, signers, tmp_path):
    keys = tmp_path / "adb_keys"
    keys.write_text(signers[0].GetPublicKey() + "\n")
    raw = Raw(serve(auth=True, keys_file=keys).port)
    first = raw.connect()
    assert (first.name, first.arg0, len(first.data)) == ("AUTH", wire.AUTH_TOKEN, 20)
    raw.send(wire.AUTH, wire.AUTH_SIGNATURE, 0, signers[1].Sign(first.data))   # unknown key
    second = raw.recv()
    assert (second.name, second.arg0) == ("AUTH", wire.AUTH_TOKEN) and second.data != first.data
    raw.send(wire.AUTH, wire.AUTH_SIGNATURE, 0, signers[0].Sign(first.data))   # a stale token
    third = raw.recv()
    assert third.name == "AUTH" and third.data not in (first.data, second.data)
    raw.send(wire.AUTH, wire.AUTH_SIGNATURE, 0, signers[0].Sign(third.data))
    assert raw.recv().data == BANNER


def test_a_new_key_is_accepted_then_known(serve, signers, tmp_path):
    keys = tmp_path / "adb_keys"
    server = serve(auth=True, keys_file=keys)
    assert client(server, [signers[0]]).shell("echo first") == "first\n"
    assert keys.read_text().split()[0] == signers[0].GetPublicKey().split()[0]
    server.accept_new_keys = False          # now only the signature path can let it in
    assert client(server, [signers[0]]).shell("echo again") == "again\n"
    assert len(keys.read_text().splitlines()) == 1


def test_refusing_new_keys_leaves_the_client_waiting(serve, signers, tmp_path):
    keys = tmp_path / "adb_keys"
    server = serve(auth=True, keys_file=keys, accept_new_keys=False)
    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        client(server, [signers[0]], auth_timeout_s=0.4)
    assert "imeout" in type(caught.value).__name__ and time.monotonic() - start < 3
    assert not keys.exists()


def test_nothing_is_served_before_auth(serve, signers):
    raw = Raw(serve(auth=True).port)
    assert raw.connect().name == "AUTH"
    raw.send(wire.OPEN, 1, 0, b"shell:echo hi\0")
    assert raw.quiet(0.3)


# -- streams ------------------------------------------------------------------------------------
def test_output_larger_than_maxdata_in_acknowledged_chunks(serve):
    server = serve()
    text = "".join(f"line {i:06d} of the big file\n" for i in range(25000))   # ~700 KB
    server.shell.fs.write("/sdcard/big.txt", text)
    assert client(server).shell("cat /sdcard/big.txt") == text             # adb-shell, 256 KiB chunks
    raw = Raw(server.port)
    raw.connect(maxdata=4096)
    raw.send(wire.OPEN, 5, 0, b"shell:cat /sdcard/big.txt\0")
    okay = raw.recv()
    assert (okay.name, okay.arg1) == ("OKAY", 5)
    first = raw.recv()
    assert first.name == "WRTE" and len(first.data) == 4096
    assert raw.quiet(0.2)                     # nothing more until the client says OKAY
    raw.send(wire.OKAY, 5, okay.arg0)
    assert (first.data + raw.drain(5)).decode() == text


def test_several_streams_on_one_connection(serve):
    server = serve()
    server.shell.fs.write("/sdcard/a.txt", "a" * 10000)
    raw = Raw(server.port)
    raw.connect(maxdata=4096)
    raw.send(wire.OPEN, 1, 0, b"shell:cat /sdcard/a.txt\0")
    raw.send(wire.OPEN, 2, 0, b"exec:echo two\0")
    got = {1: b"", 2: b""}
    open_streams = {1, 2}
    while open_streams:
        msg = raw.recv()
        if msg.name == "WRTE":
            got[msg.arg1] += msg.data
            raw.send(wire.OKAY, msg.arg1, msg.arg0)
        elif msg.name == "CLSE":
            open_streams.discard(msg.arg1)
    assert got == {1: b"a" * 10000, 2: b"two\n"}


@pytest.mark.parametrize("service", [b"sync:", b"jdwp", b"tcpip:5555", b"reboot:", b"root:",
                                     b"shell,v2,raw:echo hi", b"framebuffer:"])
def test_unknown_services_are_refused(serve, service):
    raw = Raw(serve().port)
    raw.connect()
    raw.send(wire.OPEN, 9, 0, service + b"\0")
    msg = raw.recv()
    assert (msg.name, msg.arg0, msg.arg1) == ("CLSE", 0, 9)


def test_a_refused_service_does_not_break_the_client(serve):
    device = client(serve())
    with pytest.raises(Exception):
        device.list("/sdcard", transport_timeout_s=0.5, read_timeout_s=0.5)
    assert device.shell("echo still here") == "still here\n"


def test_interactive_shell_session(serve):
    raw = Raw(serve().port)
    raw.connect()
    raw.send(wire.OPEN, 3, 0, b"shell:\0")
    okay = raw.recv()
    prompt = raw.recv()
    assert prompt.data == b"hexa:/ $ "
    raw.send(wire.OKAY, 3, okay.arg0)
    raw.send(wire.WRTE, 3, okay.arg0, b"x=7; echo $x\r")
    assert raw.recv().name == "OKAY"          # our write acknowledged
    screen = raw.recv()
    assert screen.data == b"x=7; echo $x\r\n7\r\nhexa:/ $ "
    raw.send(wire.OKAY, 3, okay.arg0)
    raw.send(wire.WRTE, 3, okay.arg0, b"echo $x; exit\r")
    assert raw.recv().name == "OKAY"
    assert raw.recv().data == b"echo $x; exit\r\n7\r\n"
    raw.send(wire.OKAY, 3, okay.arg0)
    assert raw.recv().name == "CLSE"


def test_a_client_may_close_an_open_stream(serve):
    raw = Raw(serve().port)
    raw.connect()
    raw.send(wire.OPEN, 4, 0, b"shell:\0")
    okay = raw.recv()
    raw.recv()                                # the prompt
    raw.send(wire.CLSE, 4, okay.arg0)
    msg = raw.recv()
    assert (msg.name, msg.arg0, msg.arg1) == ("CLSE", okay.arg0, 4)


# -- misbehaving clients ------------------------------------------------------------------------
def test_clients_vanishing_mid_message_cost_only_themselves(serve):
    server = serve(part_timeout_s=0.3)
    good = client(server)
    header = wire.HEADER.pack(wire.OPEN, 1, 0, 100, 0, wire.OPEN ^ 0xFFFFFFFF)
    for attack in ("half header", "payload never comes", "garbage", "oversize", "stall", "reset"):
        raw = Raw(server.port)
        raw.connect()
        if attack == "half header":
            raw.sock.sendall(header[:10])
        elif attack == "payload never comes":
            raw.sock.sendall(header + b"shell:")
        elif attack == "garbage":
            raw.sock.sendall(os.urandom(24))
        elif attack == "oversize":
            raw.sock.sendall(wire.HEADER.pack(wire.WRTE, 1, 1, 50 << 20, 0, wire.WRTE ^ 0xFFFFFFFF))
        elif attack == "stall":
            raw.sock.sendall(header[:12])
        elif attack == "reset":
            raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if attack in ("garbage", "oversize", "stall"):
            assert raw.closed_by_server(), attack
        raw.sock.close()
        assert good.shell(f"echo {attack.replace(' ', '_')}") == attack.replace(" ", "_") + "\n"
    assert eventually(lambda: server.client_count() == 1)


def test_bad_checksums_are_dropped(serve):
    server = serve()
    raw = Raw(server.port)
    raw.send(wire.CNXN, wire.VERSION, 4096, b"host::\0", check=12345)
    assert raw.closed_by_server()
    strict = Raw(server.port)
    strict.connect(version=wire.VERSION)      # an old client: every payload must be summed
    strict.send(wire.OPEN, 1, 0, b"shell:echo hi\0", check=0)
    assert strict.closed_by_server()
    modern = Raw(server.port)
    modern.connect(version=wire.VERSION_SKIP_CHECKSUM)   # adb since 2017 sends 0
    modern.send(wire.OPEN, 1, 0, b"shell:echo hi\0", check=0)
    assert modern.recv().name == "OKAY"
    assert modern.drain(1) == b"hi\n"


def test_idle_clients_are_dropped(serve):
    server = serve(handshake_timeout_s=0.3, idle_timeout_s=0.5)
    silent = Raw(server.port)
    start = time.monotonic()
    assert silent.closed_by_server() and time.monotonic() - start < 2
    online = Raw(server.port)
    online.connect()
    assert online.closed_by_server()


def test_concurrent_clients(serve):
    server = serve()
    results, errors = {}, []

    def work(n: int) -> None:
        try:
            device = client(server)
            results[n] = [device.shell(f"echo {n}-{i}; input tap {n} {i}") for i in range(5)]
            device.close()
        except Exception as exc:   # reported below, with the thread's number
            errors.append((n, exc))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert errors == []
    assert results == {n: [f"{n}-{i}\n" for i in range(5)] for n in range(6)}
    assert sorted(e for e in server.phone.events) == sorted(("tap", n, i) for n in range(6) for i in range(5))


def test_stop_closes_everything(serve):
    server = serve()
    device = client(server)
    assert device.shell("echo up") == "up\n"
    server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1)
    with pytest.raises(Exception):
        device.shell("echo down")
    assert eventually(lambda: server.client_count() == 0)


# -- the real adb -------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_real_adb_client(tmp_path):
    adb = shutil.which("adb")
    if adb is None:
        pytest.skip("the adb binary is not on PATH (Debian: apt-get install adb)")
    keys = tmp_path / "adb_keys"
    server = PhoneServer(FakePhone(), port=0, keys_file=keys)
    serial = f"127.0.0.1:{server.start()}"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        adb_port = probe.getsockname()[1]
    env = {**os.environ, "HOME": str(tmp_path), "ANDROID_ADB_SERVER_PORT": str(adb_port)}
    env.pop("ADB_VENDOR_KEYS", None)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([adb, "-P", str(adb_port), *args], env=env, capture_output=True,
                              text=True, timeout=30)

    try:
        assert run("start-server").returncode == 0
        # a new key: like a phone showing "Allow USB debugging?" the first connect may report
        # "failed to authenticate" while the key is being accepted
        assert serial in run("connect", serial).stdout
        assert run("-s", serial, "shell", "echo", "hi").stdout == "hi\n"
        assert len(keys.read_text().splitlines()) == 1
        run("disconnect", serial)
        assert run("connect", serial).stdout.strip() == f"connected to {serial}"
        assert run("-s", serial, "shell", "echo 'a  b' | grep a").stdout == "a  b\n"
    finally:
        run("kill-server")
        server.stop()
