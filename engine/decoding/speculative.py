"""What the generation loop asks of a decoding method (``Speculator``), and its two kinds.

``PlainDecoding`` (``vanilla``) proposes no drafts: each step feeds the pending token alone.
``DraftingSpeculator`` adapts a per-request ``Drafter`` to the loop, configured by the method's
``MethodSpec`` (``engine/methods.py``): which sources it drafts from, linear drafts or trees, and
whether a tree is sized by the backend's cost curve or fills a fixed budget.
"""
from __future__ import annotations

import time
from typing import Protocol, Sequence

import numpy as np

from .calibration_policy import CalibrationPolicy, calibration_for
from .drafting import ConfidenceMap, Drafter, HistoryIndex, SuffixAutomaton, build_history
from .drafting.tree import ALPHA0, ALPHA_FLOOR, DraftTree, root_only
from ..methods import MethodSpec
from ..runtime.profiling import OnlineCost

MAX_DEPTH = 16   # draft tokens along one path of a tree


class Speculator(Protocol):
    max_tree: int                              # most drafts a proposal holds (KV room is kept for them)
    calibration: CalibrationPolicy | None      # the prefill top-k view ``start`` wants, if any

    def start(self, prompt_ids: list[int], first_token: int,
              topk: tuple[np.ndarray, np.ndarray] | None) -> float:
        """A request's prompt is prefilled and its first token sampled; returns ms spent calibrating.
        ``topk`` is the whole prompt's view when ``calibration`` asked for one, else None.
        Everything done here (indexing, calibration) comes before the first token is emitted
        and counts in the request's TTFT."""

    def propose(self) -> DraftTree:
        """The tree to verify next, rooted at the pending token."""

    def observe(self, tree: DraftTree, emitted: list[int], next_ids: np.ndarray,
                verify_ms: float | None = None, past: int = 0) -> None:
        """``tree`` was verified over ``past`` cached positions in ``verify_ms``; ``emitted`` are
        the accepted drafts + the bonus token; ``next_ids[i]`` the model's argmax after node i."""


class PlainDecoding:
    """One token per forward pass: the tree is the pending token alone."""
    max_tree = 0
    calibration = None

    def __init__(self) -> None:
        self._last = -1

    def start(self, prompt_ids: list[int], first_token: int, topk) -> float:
        self._last = first_token
        return 0.0

    def propose(self) -> DraftTree:
        return root_only(self._last)

    def observe(self, tree: DraftTree, emitted: list[int], next_ids: np.ndarray,
                verify_ms: float | None = None, past: int = 0) -> None:
        self._last = emitted[-1]


class DraftingSpeculator:
    """Retrieval drafting for one request at a time (a fresh ``Drafter`` per ``start``).

    ``history``: the engine's ``HistoryIndex`` (its automaton is matched as is, never rebuilt
    here), a ready automaton, or sequences to index for this request. ``sources``: this
    request's own drafting sources, indexed in ``start`` (for a ``HistoryIndex``, only those it
    does not already hold, in a small automaton of their own)."""

    def __init__(self, spec: MethodSpec, history: HistoryIndex | SuffixAutomaton | Sequence[Sequence[int]],
                 cost: OnlineCost, max_tree: int = 32, max_depth: int = MAX_DEPTH,
                 confidence: ConfidenceMap | None = None, sources: Sequence[Sequence[int]] = ()):
        self.spec = spec
        self.confidence = confidence
        self.history = history
        self.sources = list(sources)
        self.cost = cost                  # forward cost by tokens fed and context, corrected online
        self.max_tree = max_tree
        self.max_depth = max_depth
        self.calibration = calibration_for(spec)
        self.drafter: Drafter | None = None
        self._verified_at: float | None = None   # when the last verification ended

    def start(self, prompt_ids: list[int], first_token: int,
              topk: tuple[np.ndarray, np.ndarray] | None) -> float:
        """Index the prompt (and calibrate from the prefill top-k view); return ms spent calibrating."""
        s = self.spec
        sized = s.mode == "tree" and not s.fill     # trees sized by the cost curve, at every step
        history, extra = None, None
        if s.history:
            if isinstance(self.history, HistoryIndex):
                history, extra = self.history.sam, self.history.request_index(self.sources)
            elif isinstance(self.history, SuffixAutomaton):
                history = self.history
                extra = build_history(self.sources) if self.sources else None
            else:
                history = build_history(list(self.sources) + list(self.history))
        self.drafter = Drafter(prompt_ids, history, sources_index=extra, use_context=s.context,
                               use_history=s.history, use_calibration=s.calibration, use_reuse=s.reuse,
                               mode=s.mode, cost_at=self.cost.at if sized else None,
                               confidence=self.confidence, max_branches=s.branches,
                               calibration=self.calibration.tree if self.calibration else None,
                               # a static graph's empty slots are paid anyway: start from the floor
                               alpha0=ALPHA_FLOOR if s.fill else ALPHA0)
        t0 = time.perf_counter()
        if topk is not None and self.calibration is not None:
            self.drafter.set_calibration(*topk)
        ms = (time.perf_counter() - t0) * 1000
        self.drafter.observe([first_token])
        return ms

    def propose(self) -> DraftTree:
        d = self.drafter
        if self.spec.fill:
            return d.propose(min(self.spec.fill, self.max_tree), self.max_depth)
        tree = d.propose(self.max_tree, self.max_depth)
        if self._verified_at is not None:
            self.cost.observe_overhead((time.perf_counter() - self._verified_at) * 1000, drafted=tree.n > 0)
        return tree

    def observe(self, tree: DraftTree, emitted: list[int], next_ids: np.ndarray,
                verify_ms: float | None = None, past: int = 0) -> None:
        self._verified_at = time.perf_counter()
        if verify_ms is not None:
            self.cost.observe(tree.size, past, verify_ms)
        self.drafter.observe(emitted, tree, next_ids)
