"""adb's message framing: a 24-byte header of six little-endian uint32 (command, arg0, arg1,
payload length, payload checksum, magic = command ^ 0xFFFFFFFF), then the payload.

Reading is defensive because the peer is untrusted: a short read, a bad magic, an unknown
command, an oversize length or a wrong checksum raise, and the caller drops that connection.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass


def _cmd(name: bytes) -> int:
    return int.from_bytes(name, "little")


CNXN, AUTH, OPEN, OKAY, WRTE, CLSE, SYNC = (
    _cmd(n) for n in (b"CNXN", b"AUTH", b"OPEN", b"OKAY", b"WRTE", b"CLSE", b"SYNC"))
NAMES = {c: c.to_bytes(4, "little").decode() for c in (CNXN, AUTH, OPEN, OKAY, WRTE, CLSE, SYNC)}

VERSION = 0x01000000                 # what we announce: peers then keep sending checksums
VERSION_SKIP_CHECKSUM = 0x01000001   # adb since 2017: sends 0 and checks nothing
MAX_PAYLOAD = 256 * 1024             # the most we accept (and offer) per message
MAX_PAYLOAD_V1 = 4096

AUTH_TOKEN, AUTH_SIGNATURE, AUTH_RSAPUBLICKEY = 1, 2, 3

HEADER = struct.Struct("<6I")


class ProtocolError(Exception):
    """The peer broke the framing; the connection cannot be trusted any more."""


class PeerClosed(ProtocolError):
    """The peer went away, possibly in the middle of a message."""


@dataclass(frozen=True)
class Message:
    command: int
    arg0: int
    arg1: int
    data: bytes = b""

    @property
    def name(self) -> str:
        return NAMES.get(self.command, f"0x{self.command:08x}")


def checksum(data: bytes) -> int:
    """adb's "checksum": the plain sum of the payload bytes."""
    return sum(data) & 0xFFFFFFFF


def pack(command: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    """One message, checksum always filled in: adb-shell checks it, the real adb ignores it."""
    return HEADER.pack(command, arg0 & 0xFFFFFFFF, arg1 & 0xFFFFFFFF, len(data),
                       checksum(data), command ^ 0xFFFFFFFF) + data


def read_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes; TCP may deliver them in any number of pieces."""
    chunks = bytearray()
    while len(chunks) < size:
        piece = sock.recv(min(size - len(chunks), 65536))
        if not piece:
            raise PeerClosed(f"peer closed after {len(chunks)} of {size} bytes")
        chunks += piece
    return bytes(chunks)


def read_message(sock: socket.socket, *, idle_timeout: float | None, part_timeout: float,
                 strict_checksum: bool = False, max_payload: int = MAX_PAYLOAD) -> Message:
    """The next message. ``idle_timeout`` bounds the wait for its first byte, ``part_timeout``
    each wait after that (a client that stalls mid-message is dead or hostile).
    A zero checksum is accepted unless ``strict_checksum`` (the peer announced an old version)."""
    sock.settimeout(idle_timeout)
    first = sock.recv(HEADER.size)
    if not first:
        raise PeerClosed("peer closed between messages")
    sock.settimeout(part_timeout)
    header = first + (read_exact(sock, HEADER.size - len(first)) if len(first) < HEADER.size else b"")
    command, arg0, arg1, length, check, magic = HEADER.unpack(header)
    if magic != command ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic 0x{magic:08x} for command 0x{command:08x}")
    if command not in NAMES:
        raise ProtocolError(f"unknown command 0x{command:08x}")
    if length > max_payload:
        raise ProtocolError(f"payload of {length} bytes exceeds {max_payload}")
    data = read_exact(sock, length) if length else b""
    if (check or strict_checksum) and checksum(data) != check:
        raise ProtocolError(f"bad checksum {check} (payload sums to {checksum(data)})")
    return Message(command, arg0, arg1, data)
