"""Live figures, computed only from engine events (never the wall clock), so a deterministic
event source gives deterministic panels.

``RequestMetrics`` belongs to one mode screen (a chat sent while a summary runs never mixes the two
jobs' figures) and covers one generation pass: a summary made of parts starts over at each part,
so at the end the panel, the histogram and the answer's footer all describe the same pass.
``DeviceInfo`` is the app's: model, backend, method, memory.
"""
from __future__ import annotations

import os
import resource
from collections import Counter, deque
from dataclasses import dataclass, field

from engine.events import CONSTRAINT_SOURCE, SOURCES, Done, Prefill, Step, Text
from memory import ResponseStats

SPARK_STEPS = 60      # steps drawn in the sparkline (the mean and histogram count every step)
# below this many prompt tokens actually fed, a prefill rate mostly measures a forward pass's fixed
# cost: a 1-token prefill of a kept prompt showed "13 tok/s", 16 fed tokens 56 tok/s while a 54-token
# prompt ran at 223 tok/s in the same session (120x40 tmux run, 2 busy cores): their time is shown
MIN_RATE_TOKENS = 32


def process_rss_mb(pid: int | str = "self") -> float:
    """Resident memory of a process (this one by default) in MB; for this process, its peak RSS
    where /proc is missing, for another 0.0."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if pid == "self" else 0.0


@dataclass
class DeviceInfo:
    model: str = "-"
    backend: str = "-"
    method: str = "-"
    rss_mb: float = 0.0
    engine_mb: dict = field(default_factory=dict)   # the engine's own memory by part (Engine.resident_bytes)
    child_mb: float = 0.0     # the engine's process, when it runs in a child (engine_process = "child")
    memory: str = ""          # why memory is limited this run ("" when it is the normal store)


@dataclass
class RequestMetrics:
    last_accepted: int = 0
    steps: int = 0
    accepted: int = 0
    recent: deque = field(default_factory=lambda: deque(maxlen=SPARK_STEPS))
    histogram: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)
    start_t: float | None = None
    first_token_t: float | None = None
    last_t: float | None = None
    ttft_ms: float | None = None
    prefill_done: int = 0
    prefill_total: int = 0
    prefill_reused: int = 0   # prompt tokens served from a kept prefix (in done/total, never fed)
    prefill_ms: float = 0.0
    tokens: int = 0
    draft_total_ms: float = 0.0   # over every step of the pass: the panel shows the mean per step
    verify_total_ms: float = 0.0
    switched: int = 0
    total_blocks: int = 0
    exposed_load_ms: float = 0.0
    done: Done | None = None

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    @property
    def mean_accepted(self) -> float:
        """Emitted tokens per decoding step over the whole pass (the same figure as Done's)."""
        return self.accepted / self.steps if self.steps else 0.0

    @property
    def draft_ms(self) -> float:
        return self.draft_total_ms / self.steps if self.steps else 0.0

    @property
    def verify_ms(self) -> float:
        return self.verify_total_ms / self.steps if self.steps else 0.0

    @property
    def prefill_fed(self) -> int:
        """Prompt tokens actually run through the model (the reused ones were not)."""
        if self.done:
            return self.done.prompt_tokens - self.done.reused_tokens
        return self.prefill_done - self.prefill_reused

    @property
    def prefill_rate_shown(self) -> bool:
        return self.prefill_fed >= MIN_RATE_TOKENS

    @property
    def prefill_tok_s(self) -> float:
        if self.done:
            return self.done.prefill_tok_s
        fed = self.prefill_done - self.prefill_reused
        return fed / (self.prefill_ms / 1000) if self.prefill_ms else 0.0

    @property
    def decode_tok_s(self) -> float:
        if self.done:
            return self.done.decode_tok_s
        if self.first_token_t is None or self.last_t is None or self.last_t <= self.first_token_t:
            return 0.0
        return (self.tokens - 1) / (self.last_t - self.first_token_t) if self.tokens > 1 else 0.0

    @property
    def ms_per_token(self) -> float:
        if self.done:
            return self.done.ms_per_token
        rate = self.decode_tok_s
        return 1000 / rate if rate else 0.0

    def feed(self, event) -> None:
        if isinstance(event, Prefill):
            if event.done == event.reused + event.chunk and (self.steps or self.done):   # a new pass begins
                self.reset()
            if self.start_t is None:
                self.start_t = event.t - event.ms / 1000
            self.prefill_done, self.prefill_total = event.done, event.total
            self.prefill_reused = event.reused
            self.prefill_ms += event.ms
            self.switched, self.total_blocks = event.switched_blocks, event.total_blocks
            self.exposed_load_ms = event.exposed_load_ms
        elif isinstance(event, Step):
            self.last_accepted = event.accepted
            self.steps += 1
            self.accepted += event.accepted
            self.recent.append(event.accepted)
            self.histogram[event.accepted] += 1
            self.sources.update(event.sources)
            self.draft_total_ms += event.draft_ms
            self.verify_total_ms += event.verify_ms
            self.tokens += event.accepted
            self._stamp(event.t)
        elif isinstance(event, Text):
            self._stamp(event.t)
        elif isinstance(event, Done):
            self.done = event
            self.ttft_ms = event.ttft_ms
            if not self.steps and event.new_tokens:
                self.tokens = event.new_tokens

    def _stamp(self, t: float) -> None:
        if self.first_token_t is None:
            self.first_token_t = t
            if self.start_t is not None and self.ttft_ms is None:
                self.ttft_ms = (t - self.start_t) * 1000
        self.last_t = t

    def source_shares(self) -> list[tuple[str, int, float]]:
        total = sum(self.sources.values()) or 1
        # "constraint" (forced by a decoding constraint) only shows for the requests that have one
        return [(s, self.sources.get(s, 0), self.sources.get(s, 0) / total) for s in SOURCES
                if s != CONSTRAINT_SOURCE or self.sources.get(s)]


def footer_text(stats: ResponseStats | None, continues: bool = True) -> str:
    """One line of final figures kept under a response ("" for a message that is not one).
    ``continues``: F5 can continue a response cut at the token limit (the assistant's; a summary
    cannot be continued)."""
    if stats is None:
        return ""
    parts = [f"{stats.new_tokens} tok"]
    if stats.mean_accepted:
        parts.append(f"{stats.mean_accepted:.2f} acc/step")
    if stats.ttft_ms is not None:
        parts.append(f"TTFT {stats.ttft_ms:.0f} ms")
    if stats.decode_tok_s:
        parts.append(f"{stats.decode_tok_s:.1f} tok/s")
    if stats.ms_per_token:
        parts.append(f"{stats.ms_per_token:.1f} ms/tok")
    parts.append(stats.method)
    if stats.served_by:
        parts.append(f"served by {stats.served_by}")
    reason = stats.stop_reason
    if reason == "max_tokens":
        parts.append("token limit (F5 continues)" if continues
                     else f"stopped at the token limit ({stats.new_tokens})")
    elif reason and reason != "eos":
        parts.append(reason)
    return " · ".join(p for p in parts if p)
