"""Messages posted from worker threads to the UI (``post_message`` is thread-safe)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


@dataclass
class AgentEvent(Message):
    request: int
    event: Any


@dataclass
class AgentFailed(Message):
    request: int
    error: str


@dataclass
class AgentFinished(Message):
    request: int


@dataclass
class RuntimeReady(Message):
    pass
