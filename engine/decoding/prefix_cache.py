"""Prefix KV reuse across requests: the KV rows of recently prefilled prompts, kept by the engine.

A prompt that starts with the tokens of a kept one (the next turn of a chat, the next step of an
agent, the same document asked about again) gets those rows copied into its cache and prefills
only the rest (``generation.generate``). An entry holds a prompt's token ids, a copy of its K/V
rows (every layer, ``KVCache`` layout [layers, kv_heads, tokens, head_dim]) and, when its request
calibrated, the prefill top-k view rows of those positions, so that a warm request still hands
its speculator a view of the whole prompt. Entries are evicted least recently used first, past a
total token budget.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from ..runtime.kv_cache import KVCache

# Fewest tokens worth reusing. Copying a row costs ~0.01 ms against ~2.5 ms to prefill it (SmolLM2
# on 2 cores), so any match saves time; but a match of a few tokens is a coincidence that saves
# a few ms, while every warm request prefills its rest in chunks that start elsewhere than a cold
# run's (fp32 rounding then differs in the last bits, as with another ``chunk_size``). 16 keeps
# every real match: a shared system prompt (SmolLM2's default is ~30 tokens) and longer.
MIN_REUSE = 16

ViewRows = tuple[np.ndarray, np.ndarray]   # calibration.TopKView rows: ([T, k] ids, [T, k] probs)


@dataclass(frozen=True, eq=False)
class Prefix:
    """One kept prompt. Its arrays are never written after ``put``: readers need no lock."""
    ids: tuple[int, ...]
    k: np.ndarray                      # [layers, kv_heads, len(ids), head_dim]
    v: np.ndarray
    view: ViewRows | None = None       # the prefill top-k view of every position, if calibrated
    view_key: Hashable | None = None   # what the view rows depend on (the calibration policy)

    def restore(self, cache: KVCache, n: int) -> None:
        """Make the empty ``cache`` hold this prompt's first ``n`` positions."""
        cache.k[:, :, :n] = self.k[:, :, :n]
        cache.v[:, :, :n] = self.v[:, :, :n]
        cache.length = n

    def view_head(self, n: int) -> ViewRows | None:
        return None if self.view is None else (self.view[0][:n], self.view[1][:n])

    def covers(self, ids: tuple[int, ...], view_key: Hashable | None) -> bool:
        """Serves whatever a kept prompt ``ids`` (with view rows made under ``view_key``; None:
        without view rows) could serve."""
        return self.ids[:len(ids)] == ids and (view_key is None or self.view_key == view_key)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PrefixStore:
    """Recently prefilled prompts, least recently used first, at most ``budget_tokens`` in all."""

    def __init__(self, budget_tokens: int):
        self.budget = budget_tokens
        self._entries: OrderedDict[int, Prefix] = OrderedDict()   # by id(entry), oldest first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def tokens(self) -> int:
        return sum(len(e.ids) for e in self._entries.values())

    def nbytes(self) -> int:
        return sum(e.k.nbytes + e.v.nbytes for e in self._entries.values())

    def lookup(self, ids: Sequence[int], view_key: Hashable | None = None) -> tuple[Prefix | None, int]:
        """The kept entry sharing the longest token prefix with ``ids`` and how many of its tokens
        to reuse: at most ``len(ids) - 1`` (the last prompt token is always fed, its logits give
        the first new token), and (None, 0) below ``MIN_REUSE``. ``view_key``: the request
        calibrates, so only entries holding view rows made the same way can serve it."""
        with self._lock:
            best, best_n = None, 0
            for entry in self._entries.values():
                if view_key is not None and entry.view_key != view_key:
                    continue
                n = common_prefix(entry.ids, ids)
                if n > best_n:
                    best, best_n = entry, n
            n = min(best_n, len(ids) - 1)
            if best is None or n < MIN_REUSE:
                return None, 0
            self._entries.move_to_end(id(best))
            return best, n

    def put(self, ids: Sequence[int], cache: KVCache, view: ViewRows | None = None,
            view_key: Hashable | None = None) -> None:
        """Keep the prompt ``ids`` whose K/V are the first ``len(ids)`` rows of ``cache`` (copied),
        with its top-k ``view`` rows made under ``view_key``. A kept prompt it extends (the
        previous turn of the same chat) is dropped; one that already covers it is only refreshed."""
        T = len(ids)
        if T < MIN_REUSE or T > self.budget:
            return
        ids = tuple(ids)
        view = None if view is None else (view[0][:T], view[1][:T])
        key = view_key if view is not None else None
        with self._lock:
            for k, old in self._entries.items():
                if old.covers(ids, key):
                    self._entries.move_to_end(k)
                    return
        entry = Prefix(ids, cache.k[:, :, :T].copy(), cache.v[:, :, :T].copy(), view, key)
        with self._lock:
            for k, old in list(self._entries.items()):
                if entry.covers(old.ids, old.view_key):
                    del self._entries[k]
            self._entries[id(entry)] = entry
            while self.tokens > self.budget:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
