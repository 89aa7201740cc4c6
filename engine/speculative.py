"""Decoding methods: which drafting sources a request uses and how its draft trees are sized.

``vanilla`` drafts nothing. ``sam`` is the SAM-Decoding baseline (suffix automata over the prompt +
generated text and over history, one linear draft). ``hexa`` is everything: context, history,
calibrated and reused drafts merged into one tree whose size follows the backend's measured cost
curve. ``hexa-no*`` drop one technique each, for ablations. ``hexa-fill`` drafts like ``hexa`` but
fills a fixed 32-token tree every step, as on an NPU whose verification graph costs the same
however full it is: it measures drafting quality at a budget where sam's linear draft has as much
room (a CPU pays for every token, so it is slower there).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from .drafting import ConfidenceMap, Drafter, SuffixAutomaton
from .drafting.calibration import WIDE as WIDE_CALIBRATION
from .drafting.tree import ALPHA0, ALPHA_FLOOR, DraftTree


@dataclass(frozen=True)
class MethodSpec:
    mode: str = "tree"            # "tree" | "linear"
    context: bool = True
    history: bool = True
    calibration: bool = True
    reuse: bool = True
    fill: int = 0                 # >0: every tree fills this many drafts; 0: sized by the cost curve
    branches: int = 4             # continuations taken per suffix-automaton match


METHOD_SPECS: dict[str, MethodSpec | None] = {
    "vanilla": None,
    "sam": MethodSpec(mode="linear", calibration=False, reuse=False),
    "hexa": MethodSpec(),
    "hexa-nocal": MethodSpec(calibration=False),
    "hexa-noreuse": MethodSpec(reuse=False),
    "hexa-nohist": MethodSpec(history=False),
    "hexa-fill": MethodSpec(fill=32, branches=8),
}
CALIBRATION_TOPK = 4


class Speculator:
    """Adapts a per-request ``Drafter`` to the generation loop."""

    def __init__(self, spec: MethodSpec, history: SuffixAutomaton | Sequence[Sequence[int]],
                 cost_curve: Callable[[int], float], max_tree: int = 32, max_depth: int = 16,
                 confidence: ConfidenceMap | None = None):
        self.spec = spec
        self.confidence = confidence
        self.history = history
        self.cost_curve = cost_curve
        self.max_tree = max_tree
        self.max_depth = max_depth
        self.drafter: Drafter | None = None

    def start(self, prompt_ids: list[int], first_token: int,
              topk: tuple[torch.Tensor, torch.Tensor] | None) -> float:
        """Index the prompt (and calibrate from the prefill top-k view); return ms spent calibrating."""
        s = self.spec
        self.drafter = Drafter(prompt_ids, self.history if s.history else None, use_context=s.context,
                               use_history=s.history, use_calibration=s.calibration, use_reuse=s.reuse,
                               mode=s.mode, cost_curve=None if s.mode == "linear" or s.fill else self.cost_curve,
                               confidence=self.confidence, max_branches=s.branches,
                               calibration=WIDE_CALIBRATION if s.fill else None,
                               # a static graph's empty slots are paid anyway: start from the floor
                               alpha0=ALPHA_FLOOR if s.fill else ALPHA0)
        t0 = time.perf_counter()
        if topk is not None and s.calibration:
            self.drafter.set_calibration(*topk)
        ms = (time.perf_counter() - t0) * 1000
        self.drafter.observe([first_token])
        return ms

    def propose(self) -> DraftTree:
        d = self.drafter
        if self.spec.fill:
            return d.propose(min(self.spec.fill, self.max_tree), self.max_depth)
        if d.cost_curve is not None and hasattr(self.cost_curve, "at"):
            d.cost_curve = self.cost_curve.at(len(d.seq))   # cost at the current context length
        return d.propose(self.max_tree, self.max_depth)

    def observe(self, tree: DraftTree, emitted: list[int], next_ids: torch.Tensor,
                verify_ms: float | None = None, past: int | None = None) -> None:
        if verify_ms is not None and past is not None and hasattr(self.cost_curve, "observe"):
            self.cost_curve.observe(tree.size, past, verify_ms)
        self.drafter.observe(emitted, tree, next_ids)
