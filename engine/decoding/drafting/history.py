"""The engine's history drafting corpus: completed responses, each indexed once, within a token budget.

``HistoryIndex.add`` appends a finished response to one long-lived suffix automaton (O(length of
the response): eager counts, so there is no per-request O(total) count pass), between requests.
A suffix automaton cannot delete: when the corpus passes its token budget the oldest responses are
dropped until at most ``keep`` of the budget remains, and the automaton is rebuilt once from what
is kept. Each rebuild re-indexes at most ``keep * budget`` tokens and is followed by at least
``(1 - keep) * budget`` tokens of plain appends before the next, so the average cost per indexed
token stays a small constant (~1.5x a plain append at keep = 0.75).

Per-request ``sources`` (earlier responses of the same task in the benchmark, memory-retrieved past
answers from the agents) go to a small separate automaton instead of the engine's (``request_index``):
adding them to the engine corpus would make them drafting sources for every later request (another
task, another mode) and skew the frequency counts, and rebuilding the engine corpus with them is
what this module is here to avoid. A source already in the engine corpus (exact content) is skipped:
the engine's automaton already offers it. The last request's source automaton is kept, and reused
or extended when the next request's sources contain all of its sequences (the benchmark's
"earlier responses of the task" grow by one per case; every method of a case passes the same list),
otherwise rebuilt from the request's sources (bounded by the caller, e.g. 8 x 4k tokens).

Both automata change only between requests; a running ``Drafter`` holds the objects it started with
(an eviction rebuild makes a new automaton, it never edits the one a drafter matches against).
"""
from __future__ import annotations

import threading
from collections import Counter, deque
from typing import Iterable, Sequence

from .suffix_automaton import SuffixAutomaton

# 200k tokens ~ 1,500 responses of ~128 tokens (weeks of assistant/agent use). Measured on
# SmolLM2 token streams from the dev set: ~115 MB of automaton at full budget (the per-state
# transition dicts dominate), a 128-token append ~0.4 ms, an eviction rebuild of the kept 150k
# tokens ~0.7 s once per ~50k added tokens (~2 ms per 128-token response on average). Older
# responses still reach drafting as per-request ``sources`` (memory retrieves similar past answers),
# so this corpus only has to hold the recent ones; within the paper's < 500 MB extra-memory envelope.
DEFAULT_HISTORY_TOKENS = 200_000
KEEP_FRACTION = 0.75   # after an eviction at most this share of the budget remains


def _key(toks: Iterable[int]) -> tuple[int, ...]:
    return tuple(int(t) for t in toks)


class HistoryIndex:
    """Completed responses (oldest first) and the suffix automaton over them (``sam``)."""

    def __init__(self, budget_tokens: int = DEFAULT_HISTORY_TOKENS, keep: float = KEEP_FRACTION) -> None:
        if budget_tokens < 1:
            raise ValueError("budget_tokens must be positive")
        if not 0.0 < keep <= 1.0:
            raise ValueError("keep must be in (0, 1]")
        self.budget = budget_tokens
        self.keep = keep
        self.sam = SuffixAutomaton(counts="eager")
        self._responses: deque[tuple[int, ...]] = deque()
        self._contents: Counter[tuple[int, ...]] = Counter()   # what the engine corpus holds
        self._tokens = 0
        self.rebuilds = 0                                      # eviction rebuilds so far
        self._src_contents: Counter[tuple[int, ...]] = Counter()
        self._src_sam: SuffixAutomaton | None = None
        self._lock = threading.Lock()

    # ---- the engine corpus ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._responses)

    def __iter__(self):
        return iter(tuple(self._responses))

    @property
    def tokens(self) -> int:
        """Tokens of the kept responses (separators not counted)."""
        return self._tokens

    @property
    def responses(self) -> tuple[tuple[int, ...], ...]:
        """The kept responses, oldest first (a read-only copy)."""
        return tuple(self._responses)

    def __contains__(self, toks) -> bool:
        return _key(toks) in self._contents

    def add(self, token_ids: Sequence[int]) -> None:
        """Index one completed response (call between requests). A response longer than the
        budget keeps its last ``budget`` tokens."""
        toks = _key(token_ids)[-self.budget:]
        if not toks:
            return
        with self._lock:
            self._responses.append(toks)
            self._contents[toks] += 1
            self._tokens += len(toks)
            if self._tokens <= self.budget:
                self.sam.add_sequence(toks)
                return
            target = int(self.keep * self.budget)
            while self._tokens > target and len(self._responses) > 1:
                old = self._responses.popleft()
                self._tokens -= len(old)
                self._contents[old] -= 1
                if not self._contents[old]:
                    del self._contents[old]
            self.sam = SuffixAutomaton(counts="eager")   # drop ours first: no two full copies at once
            for r in self._responses:
                self.sam.add_sequence(r)
            self.rebuilds += 1

    # ---- per-request sources ------------------------------------------------------------------
    def request_index(self, sources: Sequence[Sequence[int]]) -> SuffixAutomaton | None:
        """An automaton over the request's ``sources`` that the engine corpus does not already
        hold (None when nothing is left). Call when the request starts (its cost is the request's)."""
        want: Counter[tuple[int, ...]] = Counter()
        order: list[tuple[int, ...]] = []
        with self._lock:
            for s in sources:
                k = _key(s)
                if k and k not in self._contents:
                    want[k] += 1
                    order.append(k)
            if not want:
                return None
            have = self._src_contents
            if self._src_sam is not None and all(want[k] >= n for k, n in have.items()):
                extra = want - have
                if extra:
                    for k in order:             # in the caller's order
                        if extra[k] > 0:
                            extra[k] -= 1
                            self._src_sam.add_sequence(k)
                    self._src_contents = want
                return self._src_sam
            sam = SuffixAutomaton(counts="eager")
            for k in order:
                sam.add_sequence(k)
            self._src_sam, self._src_contents = sam, want
            return sam
