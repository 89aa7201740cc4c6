"""Errors raised by the memory package (one-line, user-facing messages)."""
from __future__ import annotations


class MemoryError(Exception):  # noqa: A001 - deliberate public name: memory.MemoryError
    """Something went wrong with the local store (message is one line, safe to show)."""


class DocumentError(MemoryError):
    """A document was refused or could not be read; ``str(err)`` is a one-line reason."""
