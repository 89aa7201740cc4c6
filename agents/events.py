"""Events the agents add to the engine's stream (``engine.events``) for the app to render."""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.events import now
from memory import SentContext


@dataclass(frozen=True)
class Saved:
    """A message was stored in memory (the app uses the id for footers, copy and regenerate)."""
    session_id: int | str
    message_id: int | str
    role: str
    text: str = ""
    t: float = field(default_factory=now)
    context: SentContext | None = None   # a user message: the SentContext it is sent with (None: none)
    prompt_tokens: int = 0     # a user message: the tokens of the prompt sent for it, exactly


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


@dataclass(frozen=True)
class Observed:
    """The UI agent read the phone's screen (step counts from 1); ``shown`` are the elements the
    model is offered, numbered from 1 in that order."""
    step: int
    screen: object              # agents.ui.screen.Screen
    shown: tuple = ()
    t: float = field(default_factory=now)


@dataclass(frozen=True)
class Acted:
    """The UI agent performed ``action`` (``command``: what the phone's shell ran; ``element``:
    the label of the element it acted on; ``error``: why the phone refused it)."""
    step: int
    action: str
    element: str = ""
    command: str = ""
    error: str = ""
    t: float = field(default_factory=now)


@dataclass(frozen=True)
class EpisodeEnd:
    """An agent episode ended: ``outcome`` one of memory.episodes.OUTCOMES; ``success`` is the
    check on the device's state when one was run, else None."""
    session_id: int | str
    outcome: str
    steps: int
    message: str = ""
    success: bool | None = None
    t: float = field(default_factory=now)
