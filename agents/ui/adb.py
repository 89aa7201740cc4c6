"""A connection to a phone's adbd, straight over TCP (or USB) with ``adb-shell``: no adb server.

Facts this module is written around (adb-shell 0.4.4, checked against the virtual phone):
- only ``shell:`` is used: stdout and stderr arrive merged and there is **no exit status**, so
  callers recognise failures by their text;
- after the socket drops, ``available`` still reads True and reads time out: a failed call closes
  the connection and the next call connects again (once) before giving up with ``DeviceError``;
- a phone that has never seen our key answers AUTH, we send the public key, and it waits for its
  user to tap "Allow": ``connect`` says so in its error when that wait times out.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

DEFAULT_PORT = 5555
KEY_NAME = "adbkey"          # <keys_dir>/adbkey and adbkey.pub, as the adb tools name them


class DeviceError(Exception):
    """A one-line problem with the phone or the connection to it."""


def parse_address(address: str) -> tuple[str, int]:
    """``HOST[:PORT]`` → (host, port); a one-line DeviceError for anything else."""
    text = (address or "").strip()
    if not text:
        raise DeviceError("no device given: use HOST:PORT (e.g. 127.0.0.1:5555)")
    host, sep, port = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
    if not sep:
        host, port = text, str(DEFAULT_PORT)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DeviceError(f"bad device address {address!r}: expected HOST:PORT, e.g. 127.0.0.1:5555")
    return host, int(port)


def ensure_keys(keys_dir: Path) -> Path:
    """The private key file, created (with its .pub) on first use."""
    keys_dir = Path(keys_dir)
    key = keys_dir / KEY_NAME
    if not key.exists() or not key.with_suffix(".pub").exists():
        from adb_shell.auth.keygen import keygen

        try:
            keys_dir.mkdir(parents=True, exist_ok=True)
            keygen(str(key))
        except OSError as exc:
            raise DeviceError(f"cannot create the adb key in {keys_dir}: {exc.strerror or exc}") from None
    return key


class AdbConnection:
    """One phone. Thread-safe: one shell command at a time (adb-shell is not re-entrant)."""

    def __init__(self, address: str, keys_dir: Path, timeout_s: float = 10.0,
                 auth_timeout_s: float = 30.0, on_auth: Callable[[], None] | None = None):
        self.address = address
        self.host, self.port = parse_address(address)
        self.keys_dir = Path(keys_dir)
        self.timeout_s = timeout_s
        self.auth_timeout_s = auth_timeout_s
        self.on_auth = on_auth          # called when the phone must accept our key
        self._device = None
        self._lock = threading.Lock()

    @property
    def connected(self) -> bool:
        return self._device is not None

    def connect(self) -> None:
        with self._lock:
            self._connect()

    def _connect(self) -> None:
        from adb_shell.adb_device import AdbDevice
        from adb_shell.auth.sign_pythonrsa import PythonRSASigner

        self._drop()
        signer = PythonRSASigner.FromRSAKeyPath(str(ensure_keys(self.keys_dir)))
        device = AdbDevice(_nodelay_transport(self.host, self.port), default_transport_timeout_s=self.timeout_s)
        asked = []

        def on_auth(_device=None):
            asked.append(True)
            if self.on_auth is not None:
                self.on_auth()

        try:
            device.connect(rsa_keys=[signer], auth_timeout_s=self.auth_timeout_s,
                           read_timeout_s=self.timeout_s, auth_callback=on_auth)
        except Exception as exc:
            _close_quietly(device)
            if asked:
                raise DeviceError(f"{self.address} did not accept hexa's key within "
                                  f"{self.auth_timeout_s:g} s: allow it on the phone's screen "
                                  f"and try again") from None
            raise DeviceError(f"cannot connect to {self.address}: {_reason(exc)}") from None
        self._device = device

    def shell(self, command: str, timeout_s: float | None = None) -> str:
        """Run ``command`` in the phone's ``sh``; its merged output. Reconnects once when the
        connection turns out to be dead; a ``DeviceError`` when the phone stays unreachable."""
        timeout = timeout_s or self.timeout_s
        with self._lock:
            for attempt in (1, 2):
                if self._device is None:
                    self._connect()
                try:
                    return self._device.shell(command, timeout_s=timeout, read_timeout_s=timeout,
                                              transport_timeout_s=timeout)
                except Exception as exc:
                    self._drop()
                    if attempt == 2:
                        raise DeviceError(f"{self.address} stopped answering ({_reason(exc)})") from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        device, self._device = self._device, None
        if device is not None:
            _close_quietly(device)


def _nodelay_transport(host: str, port: int):
    """adb-shell's TCP transport with Nagle's algorithm off, as adb's own tools set their TCP
    connections (``disable_tcp_nagle`` in adb's sysdeps).
    adb-shell writes a message's 24-byte header and its payload in two sends: with Nagle on, the
    payload waited for the header's ACK, which the phone's delayed ACK held ~40 ms, so every shell
    command took ~43 ms where ~2 ms is the round trip (an exploration of Clock over TCP to the
    virtual phone: 264 actions, 22.8 s, 98% of it waiting in select; 2026-12-02)."""
    import socket

    from adb_shell.transport.tcp_transport import TcpTransport

    class NoDelayTcpTransport(TcpTransport):
        def connect(self, transport_timeout_s):
            super().connect(transport_timeout_s)
            self._connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    return NoDelayTcpTransport(host, port)


def _close_quietly(device) -> None:
    try:
        device.close()
    except Exception:
        pass


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    name = type(exc).__name__
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the phone listening? `adb tcpip 5555` or `hexa phone serve`)"
    if isinstance(exc, (TimeoutError,)) or "timeout" in name.lower() or "timed out" in str(exc):
        return "timed out"
    return f"{name}: {text[0]}" if text else name
