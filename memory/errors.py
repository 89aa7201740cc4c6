"""Errors raised by the memory package: one-line messages, safe to show to the user as they are."""
from __future__ import annotations


class StoreError(Exception):
    """Something went wrong with the local store (message is one line, safe to show)."""


class DocumentError(StoreError):
    """A document was refused or could not be read; ``str(err)`` is a one-line reason."""


class IngestCancelled(StoreError):
    """``add_document`` was cancelled; nothing of the document was kept."""
