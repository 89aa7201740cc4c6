"""Draft reuse (paper Technique 3).

When a draft x is rejected at position e, its tail is often still right: the model inserted a
word (missing-token case), used a synonym, or skipped one.  The verifier already computed the
model's own predictions y at every draft position (conditioned on the draft prefix), so we keep
the longest run x[a..b] (a > e) with y_i == x_i and reserve x[e..b] for later steps:

  * right after the rejection (the model's bonus token y_e is now the root), offer
      x[a..b]   unconditionally (substitution: y_e replaced x[e..a-1]),
      x[e..b]   unconditionally if a == e + 1 (insertion: x_e still follows the model's word);
  * at any later step, if the last committed token(s) equal some x[j] (the generation re-joined
    the old draft), offer x[j+1..b] — longer anchor agreement, higher confidence.

Entries expire after ``ttl`` steps or once generation has moved ``len + max_lag`` tokens past
where they were made; at most ``max_offer_tokens`` reuse tokens are offered per step (a step's
budget belongs to fresher sources first).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .tree import Candidate


@dataclass(slots=True)
class ReuseEntry:
    tokens: list[int]     # x[e..b]: the rejected token through the end of the matching run
    run_start: int        # index of a (first token of the run) within tokens
    created_at: int       # committed length when recorded
    age: int = 0          # offers made (steps seen) since recorded


def best_run(draft: Sequence[int], preds: Sequence[int], start: int = 1) -> tuple[int, int]:
    """Longest run [a, b) with draft[i] == preds[i] for i >= start; (0, 0) if none."""
    best_a = best_b = 0
    a = -1
    for i in range(start, len(draft)):
        if draft[i] == preds[i]:
            if a < 0:
                a = i
            if i + 1 - a > best_b - best_a:
                best_a, best_b = a, i + 1
        else:
            a = -1
    return best_a, best_b


class ReuseBuffer:
    def __init__(self, max_entries: int = 4, ttl: int = 4, max_lag: int = 8, min_run: int = 2,
                 max_offer_tokens: int = 32, run_prob: float = 0.85, other_prob: float = 0.4,
                 anchored_prob: tuple[float, float] = (0.5, 0.7), blind_prob: float = 0.3) -> None:
        self.entries: list[ReuseEntry] = []
        self.max_entries, self.ttl, self.max_lag, self.min_run = max_entries, ttl, max_lag, min_run
        self.max_offer_tokens = max_offer_tokens
        # first token: how sure we are the generation re-joins the old draft here (anchor with
        # 1 / >= 2 agreeing tokens, or blind); later tokens: verified run (y == x) vs not
        self.run_prob, self.other_prob = run_prob, other_prob
        self.anchored_prob, self.blind_prob = anchored_prob, blind_prob

    def __len__(self) -> int:
        return len(self.entries)

    def record(self, draft: Sequence[int], preds: Sequence[int], committed_len: int) -> ReuseEntry | None:
        """``draft[0]`` is the rejected token x_e, ``preds[i]`` the model's argmax at draft[i]'s
        position (so preds[0] != draft[0]).  Keeps x[e..b] if its best run is long enough."""
        a, b = best_run(draft, preds, 1)
        if b - a < self.min_run:
            return None
        entry = ReuseEntry(list(draft[:b]), a, committed_len)
        self.entries = [e for e in self.entries if e.tokens != entry.tokens]
        self.entries.append(entry)
        if len(self.entries) > self.max_entries:
            self.entries.pop(0)
        return entry

    def _probs(self, e: ReuseEntry, start: int, first: float) -> list[float]:
        return [first] + [self.run_prob if i >= e.run_start else self.other_prob
                          for i in range(start + 1, len(e.tokens))]

    def offers(self, recent: Sequence[int]) -> list[Candidate]:
        """Candidates for this step given the committed suffix ``recent`` (last token = root)."""
        out: list[Candidate] = []
        budget = self.max_offer_tokens
        if not recent:
            return out
        last = recent[-1]
        for e in reversed(self.entries):          # newest first
            toks = e.tokens
            # anchored: last committed token(s) equal toks[j]; prefer the longest agreement
            best_j, best_len = -1, 0
            for j in range(len(toks) - 1):
                if toks[j] != last:
                    continue
                m = 1
                while m <= j and m < len(recent) and toks[j - m] == recent[-1 - m]:
                    m += 1
                if m > best_len:
                    best_j, best_len = j, m
            cands = []
            if best_j >= 0:
                cands.append((best_j + 1, self.anchored_prob[min(best_len, 2) - 1]))
            elif e.age == 0:                      # blind offers, only right after the rejection
                cands.append((e.run_start, self.blind_prob))          # substitution
                if e.run_start == 1:
                    cands.append((0, self.blind_prob * 0.8))          # insertion: x_e still follows
            for start, first in cands:
                seg = toks[start:]
                if not seg or len(seg) > budget:
                    continue
                budget -= len(seg)
                out.append(Candidate(seg, self._probs(e, start, first), "reuse"))
        return out

    def step(self, committed_len: int) -> None:
        """Age entries after a verification step and drop the stale ones."""
        keep = []
        for e in self.entries:
            e.age += 1
            if e.age > self.ttl or committed_len - e.created_at > len(e.tokens) + self.max_lag:
                continue
            keep.append(e)
        self.entries = keep

    def consume(self, recent: Sequence[int]) -> None:
        """Drop entries whose last token was just committed: nothing of them is left to offer."""
        if recent:
            self.entries = [e for e in self.entries if not (e.tokens[-1] == recent[-1]
                            and len(recent) >= 2 and len(e.tokens) >= 2 and e.tokens[-2] == recent[-2])]
