"""The virtual phone on the network: adbd's side of adb over TCP (what ``adb connect HOST:PORT``
and adb-shell's ``AdbDeviceTcp`` talk to).

One daemon thread per client; a client that misbehaves or vanishes costs only its own thread.
All device work happens in ``Shell``, under ``phone.lock``.
"""
from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

from .. import Phone
from .auth_keys import KeyStore
from .connection import FEATURES, Connection
from ..shell.sh import Shell

log = logging.getLogger(__name__)

BANNER_PROPS = ("ro.product.name", "ro.product.model", "ro.product.device")


class PhoneServer:
    """``PhoneServer(phone).start()`` serves in the background and returns the bound port
    (``port=0`` picks a free one); ``serve_forever()`` serves in the calling thread;
    ``stop()`` closes the listener and every client."""

    def __init__(self, phone: Phone, host: str = "127.0.0.1", port: int = 5555, auth: bool = True,
                 keys_file: Path | None = None, accept_new_keys: bool = True, *,
                 idle_timeout_s: float = 3600.0, handshake_timeout_s: float = 60.0,
                 part_timeout_s: float = 10.0, max_clients: int = 64):
        self.phone = phone
        self.shell = Shell(phone)
        self.host = host
        self.port = port
        self.auth = auth
        self.keys = KeyStore(Path(keys_file) if keys_file is not None else None)
        self.accept_new_keys = accept_new_keys
        self.idle_timeout_s = idle_timeout_s            # an online client silent this long is dropped
        self.handshake_timeout_s = handshake_timeout_s  # ... one that never completes auth
        self.part_timeout_s = part_timeout_s            # ... one that stalls inside a message
        self.max_clients = max_clients
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._accept_thread: threading.Thread | None = None
        self._clients: dict[Connection, threading.Thread] = {}
        self._clients_lock = threading.Lock()

    # -- what the phone says about itself ----------------------------------------------------
    def banner(self) -> str:
        with self.phone.lock:
            props = self.phone.properties()
        fields = [f"{key}={props.get(key, '')}" for key in BANNER_PROPS]
        return "device::" + ";".join(fields + [f"features={FEATURES}"])

    def prompt(self) -> str:
        with self.phone.lock:
            device = self.phone.properties().get("ro.product.device", "android")
        return f"{device}:/ $ "

    # -- lifecycle ---------------------------------------------------------------------------
    def _bind(self) -> int:
        if self._listener is not None:
            return self.port
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(16)
        listener.settimeout(0.2)  # lets the accept loop notice stop()
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._stopping.clear()
        log.info("virtual phone listening on %s:%d (auth %s)", self.host, self.port,
                 "on" if self.auth else "off")
        return self.port

    def start(self) -> int:
        port = self._bind()
        if self._accept_thread is None:
            self._accept_thread = threading.Thread(target=self._accept_loop, daemon=True,
                                                   name=f"adb-accept-{port}")
            self._accept_thread.start()
        return port

    def serve_forever(self) -> None:
        self._bind()
        try:
            self._accept_loop()
        finally:
            self.stop()

    def stop(self) -> None:
        self._stopping.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._clients_lock:
            clients = list(self._clients.items())
        for conn, _ in clients:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        current = threading.current_thread()
        for _, thread in clients:
            if thread is not current:
                thread.join(timeout=2)
        if self._accept_thread is not None and self._accept_thread is not current:
            self._accept_thread.join(timeout=2)
        self._accept_thread = None

    def client_count(self) -> int:
        with self._clients_lock:
            return len(self._clients)

    # -- clients -----------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            listener = self._listener
            if listener is None:
                break
            try:
                sock, address = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            self._admit(sock, address)

    def _admit(self, sock: socket.socket, address: tuple) -> None:
        with self._clients_lock:
            if len(self._clients) >= self.max_clients:
                log.warning("refusing %s: %d clients already", address, len(self._clients))
                sock.close()
                return
            _keepalive(sock)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(sock, address, self)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                      name=f"adb-client-{address[0]}:{address[1]}")
            self._clients[conn] = thread
        log.info("adb client %s:%s connected", *address[:2])
        thread.start()

    def _serve(self, conn: Connection) -> None:
        try:
            conn.run()
        finally:
            with self._clients_lock:
                self._clients.pop(conn, None)


def _keepalive(sock: socket.socket) -> None:
    """TCP keepalive probes after a minute of silence, so a vanished peer (cable pulled,
    laptop asleep) frees its thread in minutes rather than at the idle timeout."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):   # Linux names; other systems keep their defaults
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
