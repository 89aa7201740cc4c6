"""Plain records returned by the memory API."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields


@dataclass
class Session:
    id: int
    title: str
    mode: str
    model: str
    system_prompt: str
    created: float          # unix time (seconds)
    updated: float          # unix time of the last change (new message, rename, ...)
    retrieval: bool | None = None   # this session's retrieval switch (None: the setting decides)


@dataclass
class Message:
    id: int
    session_id: int
    role: str               # "user" | "assistant" | "system" | "tool" | ...
    text: str
    token_ids: list[int]    # token ids of an assistant reply; [] when not given
    mode: str
    model: str
    stats: "ResponseStats | None"   # a response's figures; None for a user message (or none kept)
    created: float
    context: "SentContext | None" = None   # a user message: the retrieved context sent with it


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
    title: str = ""         # the session's title or the document's name, for "context: 2 notes from …"
    session_id: int | None = None   # the session it was said in (a document: the one it was given in)
    created: float = 0.0    # unix time it was stored (for the recency bonus)


@dataclass
class ResponseStats:
    """The figures of one generated response (the engine's ``Done`` without its text and ids),
    stored as JSON in ``messages.stats``. Every field has a default: a row written by an older
    hexa lacks some, and keys this version does not know are dropped on reading."""
    stop_reason: str = ""
    prompt_tokens: int = 0
    new_tokens: int = 0
    ttft_ms: float | None = None
    prefill_ms: float = 0.0
    prefill_tok_s: float = 0.0
    decode_ms: float = 0.0
    decode_tok_s: float = 0.0
    ms_per_token: float = 0.0
    steps: int = 0
    mean_accepted: float = 0.0
    draft_ms: float = 0.0
    verify_ms: float = 0.0
    calibration_ms: float = 0.0
    accepted_by_source: dict = field(default_factory=dict)
    peak_memory_mb: float = 0.0
    method: str = ""
    reused_tokens: int = 0
    served_by: str = ""          # routing: which endpoint served each part ("": the device alone)

    @classmethod
    def from_dict(cls, d: dict | None) -> "ResponseStats | None":
        """The record of a stored JSON object; None for one with no figure (``{}``, a user
        message's row from before schema v4 once its context moved out)."""
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in (d or {}).items() if k in names}
        return cls(**known) if known else None

    def as_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


@dataclass
class SentContext:
    """The retrieved context a user message was sent with, stored in ``messages.context``.

    ``text`` is exactly what the prompt held after the user's words, so a later turn renders the
    message byte for byte as it was sent (its KV is reused); ``items`` say what it was made of,
    for the transcript's "context: 2 notes from 'Dragon story'" line (empty for a message stored
    before schema v4, whose context was kept as text only)."""
    text: str = ""
    items: list[ContextItem] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"text": self.text, "items": [asdict(it) for it in self.items]},
                          ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str | None) -> "SentContext | None":
        if not raw:
            return None
        try:
            d = json.loads(raw)
            names = {f.name for f in fields(ContextItem)}
            items = [ContextItem(**{k: v for k, v in it.items() if k in names}) for it in d.get("items", [])]
            return cls(str(d.get("text", "")), items)
        except (ValueError, TypeError, AttributeError):
            return None
