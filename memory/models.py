"""Plain records returned by the memory API."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Session:
    id: int
    title: str
    mode: str
    model: str
    system_prompt: str
    created: float          # unix time (seconds)
    updated: float          # unix time of the last change (new message, rename, ...)


@dataclass
class Message:
    id: int
    session_id: int
    role: str               # "user" | "assistant" | "system" | "tool" | ...
    text: str
    token_ids: list[int]    # token ids of an assistant reply; [] when not given
    mode: str
    model: str
    stats: dict             # per-response stats (engine Done event), {} when not given
    created: float


@dataclass
class Document:
    id: int
    path: str               # path the document was ingested from (absolute)
    name: str               # file name
    sha256: str             # hash of the file content (dedup key)
    chunks: int
    chars: int              # characters of extracted text
    created: float
    session_id: int | None = None


@dataclass
class ContextItem:
    kind: str               # "message" | "chunk"
    text: str
    source: str             # e.g. "report.pdf #3" or "session 4"
    score: float            # cosine similarity, higher is better
    ref_id: int = 0         # message id (first message of the turn) or chunk id
    tokens: int = 0         # tokens counted against the budget
