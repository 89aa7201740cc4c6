"""Events the agents add to the engine's stream (``engine.events``) for the app to render."""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.events import now


@dataclass(frozen=True)
class Saved:
    """A message was stored in memory (the app uses the id for footers, copy and regenerate)."""
    session_id: int | str
    message_id: int | str
    role: str
    text: str = ""
    t: float = field(default_factory=now)


@dataclass(frozen=True)
class Ingest:
    """Ingestion progress of one file (``error`` set when it failed)."""
    path: str
    done: int
    total: int
    doc_id: str | None = None
    error: str | None = None
    t: float = field(default_factory=now)


@dataclass(frozen=True)
class Part:
    """Summarizing progress: ``stage`` is "map" (part i of n) or "reduce" (combining)."""
    stage: str
    index: int
    total: int
    t: float = field(default_factory=now)
