"""Messages posted to the screens (``post_message`` is thread-safe)."""
from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class RuntimeReady(Message):
    """The engine and memory are loaded: screens show their sessions and send what was typed."""
