"""adb's public keys: Android's binary RSA key format, token signatures, the adb_keys file.

A key travels as base64 of the little-endian struct {u32 len_words, u32 n0inv, u8 modulus[256],
u8 rr[256], u32 exponent}, then " user@host" (and a NUL on the wire). adbd keeps accepted keys in
/data/misc/adb/adb_keys, one such line per key; ``KeyStore`` is that file.
"""
from __future__ import annotations

import base64
import binascii
import logging
import struct
import threading
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

log = logging.getLogger(__name__)

MODULUS_BYTES = 2048 // 8  # adbd accepts 2048-bit keys only (ANDROID_PUBKEY_MODULUS_SIZE)
_STRUCT = struct.Struct(f"<II{MODULUS_BYTES}s{MODULUS_BYTES}sI")


def decode_pubkey(text: str | bytes) -> rsa.RSAPublicKey:
    """The key in an adb_keys line or an AUTH RSAPUBLICKEY payload; ValueError if malformed."""
    if isinstance(text, bytes):
        text = text.split(b"\0", 1)[0].decode("ascii", "replace")
    fields = text.strip().split()
    if not fields:
        raise ValueError("empty key")
    try:
        raw = base64.b64decode(fields[0], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"key is not base64: {exc}") from None
    if len(raw) != _STRUCT.size:
        raise ValueError(f"key is {len(raw)} bytes, expected {_STRUCT.size}")
    words, _n0inv, modulus, _rr, exponent = _STRUCT.unpack(raw)
    if words != MODULUS_BYTES // 4:
        raise ValueError(f"modulus of {words} words, expected {MODULUS_BYTES // 4}")
    n = int.from_bytes(modulus, "little")
    if n % 2 == 0 or exponent < 3 or exponent % 2 == 0:
        raise ValueError("not an RSA public key")
    return rsa.RSAPublicNumbers(exponent, n).public_key()


def verify_token(key: rsa.RSAPublicKey, token: bytes, signature: bytes) -> bool:
    """adbd's check: RSA_verify(NID_sha1, token, ...), the 20-byte token taken as a SHA-1 digest."""
    try:
        key.verify(signature, token, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
        return True
    except (InvalidSignature, ValueError):
        return False


class KeyStore:
    """The phone's authorised keys: the lines of ``path`` (re-read on every check, so an edited
    file counts at once), or memory only when ``path`` is None."""

    def __init__(self, path: Path | None):
        self.path = path
        self._memory: list[str] = []
        self._parsed: dict[str, rsa.RSAPublicKey | None] = {}
        self._lock = threading.Lock()

    def lines(self) -> list[str]:
        found = list(self._memory)
        if self.path is not None:
            try:
                found += self.path.read_text(encoding="utf-8", errors="replace").splitlines()
            except FileNotFoundError:
                pass
        return [line.strip() for line in found if line.strip()]

    def keys(self) -> list[rsa.RSAPublicKey]:
        out = []
        with self._lock:
            for line in self.lines():
                if line not in self._parsed:
                    try:
                        self._parsed[line] = decode_pubkey(line)
                    except ValueError as exc:
                        log.warning("adb_keys: skipping a bad key line (%s)", exc)
                        self._parsed[line] = None
                if self._parsed[line] is not None:
                    out.append(self._parsed[line])
        return out

    def verify(self, token: bytes, signature: bytes) -> bool:
        return any(verify_token(key, token, signature) for key in self.keys())

    def add(self, payload: bytes) -> bool:
        """Authorise the key of an AUTH RSAPUBLICKEY payload ("the user tapped Allow").
        False (and nothing stored) if it is not a valid key."""
        line = payload.split(b"\0", 1)[0].decode("ascii", "replace").strip()
        try:
            decode_pubkey(line)
        except ValueError as exc:
            log.warning("refusing a malformed public key: %s", exc)
            return False
        with self._lock:
            if line in self.lines():
                return True
            if self.path is None:
                self._memory.append(line)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(line + "\n")
        return True
