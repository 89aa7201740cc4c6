"""One adb client on one TCP socket: the handshake (CNXN, AUTH) and its streams (OPEN, WRTE,
OKAY, CLSE), driven by a single thread that is the socket's only reader and writer.

A stream's output waits in ``Stream.pending`` and goes out one WRTE at a time: the protocol
allows a single unacknowledged WRTE per stream, so the next chunk leaves on the client's OKAY.
"""
from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field
from typing import Protocol

from . import wire
from .auth_keys import KeyStore
from ..shell.sh import Shell
from .tty import LineSession

log = logging.getLogger(__name__)

# shell_v2 is deliberately absent, so clients use plain "shell:" (no exit codes, no pty framing);
# so is everything sync/abb/delayed_ack-related, which this phone does not serve.
FEATURES = ""
SHELL_SERVICES = ("shell:", "exec:")
MAX_STREAMS = 64   # per connection: each open stream holds its pending output


class Host(Protocol):
    """What a connection needs of its server (PhoneServer)."""
    shell: Shell
    keys: KeyStore
    auth: bool
    accept_new_keys: bool
    idle_timeout_s: float
    handshake_timeout_s: float
    part_timeout_s: float

    def banner(self) -> str: ...

    def prompt(self) -> str: ...


@dataclass
class Stream:
    local_id: int                  # ours
    remote_id: int                 # the client's
    pending: bytearray = field(default_factory=bytearray)
    awaiting_okay: bool = False
    closing: bool = False          # close once pending is flushed
    session: LineSession | None = None


class Connection:
    def __init__(self, sock: socket.socket, address: tuple, server: Host):
        self.sock = sock
        self.address = address
        self.server = server
        self.online = False
        self.token: bytes | None = None
        self.strict_checksum = False
        self.version = wire.VERSION
        self.max_out = wire.MAX_PAYLOAD_V1   # the client's limit for what we send
        self.streams: dict[int, Stream] = {}
        self._next_id = 1

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> None:
        peer = "%s:%s" % self.address[:2]
        try:
            while True:
                idle = self.server.idle_timeout_s if self.online else self.server.handshake_timeout_s
                msg = wire.read_message(self.sock, idle_timeout=idle,
                                        part_timeout=self.server.part_timeout_s,
                                        strict_checksum=self.strict_checksum)
                self.handle(msg)
        except wire.PeerClosed as exc:
            log.info("adb client %s left: %s", peer, exc)
        except wire.ProtocolError as exc:
            log.warning("adb client %s dropped: %s", peer, exc)
        except socket.timeout:
            log.info("adb client %s dropped: timed out", peer)
        except OSError as exc:
            log.info("adb client %s gone: %s", peer, exc)
        except Exception:  # a bug here must cost one client, never the server
            log.exception("adb client %s: unexpected error", peer)
        finally:
            self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        self.sock.settimeout(self.server.part_timeout_s)  # a client that never reads is dropped
        self.sock.sendall(wire.pack(command, arg0, arg1, data))

    def handle(self, msg: wire.Message) -> None:
        if msg.command == wire.CNXN:
            self.on_connect(msg)
        elif msg.command == wire.AUTH:
            self.on_auth(msg)
        elif not self.online:
            log.debug("ignoring %s before the connection is online", msg.name)
        elif msg.command == wire.OPEN:
            self.on_open(msg)
        elif msg.command == wire.OKAY:
            self.on_okay(msg)
        elif msg.command == wire.WRTE:
            self.on_write(msg)
        elif msg.command == wire.CLSE:
            self.on_close(msg)

    # -- handshake --------------------------------------------------------------------------
    def on_connect(self, msg: wire.Message) -> None:
        self.online = False
        self.streams.clear()
        # adb since 2017 announces 0x01000001 and stops checksumming; older peers must be checked
        self.strict_checksum = msg.arg0 < wire.VERSION_SKIP_CHECKSUM
        self.version = min(msg.arg0, wire.VERSION)
        self.max_out = max(min(msg.arg1, wire.MAX_PAYLOAD), 256)
        if self.server.auth:
            self.send_token()
        else:
            self.go_online()

    def send_token(self) -> None:
        self.token = os.urandom(20)
        self.send(wire.AUTH, wire.AUTH_TOKEN, 0, self.token)

    def go_online(self) -> None:
        self.online = True
        self.send(wire.CNXN, self.version, self.max_out, self.server.banner().encode())

    def on_auth(self, msg: wire.Message) -> None:
        if self.online or self.token is None:
            return
        if msg.arg0 == wire.AUTH_SIGNATURE:
            if self.server.keys.verify(self.token, msg.data):
                self.go_online()
            else:
                self.send_token()   # adbd answers a failed signature with a fresh token
        elif msg.arg0 == wire.AUTH_RSAPUBLICKEY:
            if self.server.accept_new_keys and self.server.keys.add(msg.data):
                log.info("authorised a new adb key from %s", self.address[0])
                self.go_online()
            # else: a real phone waits for the user, who never taps Allow; the client times out

    # -- streams ----------------------------------------------------------------------------
    def new_id(self) -> int:
        local_id = self._next_id
        self._next_id = self._next_id % 0x7FFFFFFF + 1
        return local_id

    def on_open(self, msg: wire.Message) -> None:
        remote_id = msg.arg0
        if remote_id == 0 or msg.arg1 != 0:
            return
        service = msg.data.split(b"\0", 1)[0].decode("utf-8", "replace")
        prefix = next((p for p in SHELL_SERVICES if service.startswith(p)), None)
        if prefix is None or len(self.streams) >= MAX_STREAMS:
            log.info("refusing service %r", service[:80])
            self.send(wire.CLSE, 0, remote_id)   # what adbd does for a service it cannot serve
            return
        command = service[len(prefix):]
        stream = Stream(self.new_id(), remote_id)
        self.streams[stream.local_id] = stream
        self.send(wire.OKAY, stream.local_id, remote_id)
        if command.strip() or prefix == "exec:":
            stream.pending += self.server.shell.run(command).encode("utf-8", "replace")
            stream.closing = True
        else:
            stream.session = LineSession(self.server.shell, self.server.prompt())
            stream.pending += stream.session.greeting()
        self.pump(stream)

    def pump(self, stream: Stream) -> None:
        if stream.awaiting_okay:
            return
        if stream.pending:
            chunk = bytes(stream.pending[:self.max_out])
            del stream.pending[:self.max_out]
            stream.awaiting_okay = True
            self.send(wire.WRTE, stream.local_id, stream.remote_id, chunk)
        elif stream.closing:
            self.streams.pop(stream.local_id, None)
            self.send(wire.CLSE, stream.local_id, stream.remote_id)

    def find(self, msg: wire.Message) -> Stream | None:
        stream = self.streams.get(msg.arg1)
        return stream if stream is not None and stream.remote_id == msg.arg0 else None

    def on_okay(self, msg: wire.Message) -> None:
        stream = self.find(msg)
        if stream is not None:
            stream.awaiting_okay = False
            self.pump(stream)

    def on_write(self, msg: wire.Message) -> None:
        stream = self.find(msg)
        if stream is None:
            return
        self.send(wire.OKAY, stream.local_id, stream.remote_id)
        if stream.session is not None and not stream.closing:
            output, finished = stream.session.feed(msg.data)
            stream.pending += output
            stream.closing = finished
            self.pump(stream)

    def on_close(self, msg: wire.Message) -> None:
        stream = self.find(msg)
        if stream is not None:   # closed by the client while still open here: confirm
            self.streams.pop(stream.local_id, None)
            self.send(wire.CLSE, stream.local_id, stream.remote_id)
