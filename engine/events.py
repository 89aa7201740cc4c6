"""Engine events: the one contract the TUI and the benchmark both read.

Every event is a small frozen dataclass stamped with a monotonic time (seconds, from
``time.perf_counter``). ``generate`` yields them in order: optional ``Notice``s, ``Prefill``
progress, then ``Step``/``Text`` pairs while decoding, and exactly one ``Done``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

# Where an accepted token came from: a draft source, or the model's own bonus token (the one the
# verifier produces itself after the accepted drafts). The one list the drafter, the TUI and the
# benchmark use. "constraint": drafted because a decoding constraint allowed no other token.
CONSTRAINT_SOURCE = "constraint"
DRAFT_SOURCES = ("context", "history", "calibrated", "reuse", CONSTRAINT_SOURCE)
BONUS_SOURCE = "model"
SOURCES = DRAFT_SOURCES + (BONUS_SOURCE,)


def now() -> float:
    return time.perf_counter()


@dataclass(frozen=True)
class Notice:
    """Something the user should know about this request (e.g. the prompt was cut)."""
    message: str
    t: float = field(default_factory=now)


@dataclass(frozen=True)
class Prefill:
    done: int                 # prompt tokens processed so far
    total: int                # prompt tokens in all
    chunk: int                # tokens in the chunk just processed
    graph: str                # graph/shape label in use, e.g. "torch:dynamic" or "G1[256]"
    switched_blocks: int = 0  # progressive graph switching: blocks already on the decode graph
    total_blocks: int = 0
    exposed_load_ms: float = 0.0
    ms: float = 0.0           # wall time of this chunk
    t: float = field(default_factory=now)
    reused: int = 0           # prompt tokens served from a kept prefix (counted in done and total)


@dataclass(frozen=True)
class Step:
    proposed: int             # draft tokens verified in this step (tree nodes, root excluded)
    accepted: int             # tokens emitted by this step, bonus token included (>= 1)
    sources: tuple[str, ...]  # source of each emitted token, one of SOURCES
    draft_ms: float
    verify_ms: float
    tree_size: int = 0
    tree_depth: int = 0
    t: float = field(default_factory=now)


@dataclass(frozen=True)
class Text:
    delta: str
    t: float = field(default_factory=now)


@dataclass(frozen=True)
class Done:
    stop_reason: str          # "eos" | "stop_string" | "max_tokens" | "cancelled" | "context_full"
    text: str
    token_ids: tuple[int, ...]
    prompt_tokens: int
    new_tokens: int
    ttft_ms: float            # request start -> first new token available
    prefill_ms: float
    prefill_tok_s: float      # prompt tokens actually prefilled (reused ones excluded) per second
    decode_ms: float
    decode_tok_s: float
    ms_per_token: float
    steps: int                # verification (forward) passes while decoding
    mean_accepted: float      # emitted tokens per decoding step
    draft_ms: float = 0.0     # totals over the request
    verify_ms: float = 0.0
    calibration_ms: float = 0.0
    accepted_by_source: dict = field(default_factory=dict)
    peak_memory_mb: float = 0.0
    method: str = "vanilla"
    t: float = field(default_factory=now)
    reused_tokens: int = 0    # prompt tokens served from a kept prefix, not prefilled
    served_by: str = ""       # routing: which endpoint served each part ("" : the device alone)


Event = Notice | Prefill | Step | Text | Done
