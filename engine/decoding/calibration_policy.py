"""In-context calibration as the engine runs it: the one place its policy lives.

A method that calibrates asks prefill for the model's top next tokens at every prompt position
(``TopKView``), then builds a calibrated tree from them (the algorithm is
``drafting/calibration.py``). What is ranked, how many tokens are kept per position and how wide
the tree grows is chosen here, per method (``calibration_for``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..runtime.backend import Backend
from .drafting.calibration import CalibrationConfig
from ..runtime.reference import softmax_in_place
from .sampling import topk
from ..methods import MethodSpec


@dataclass(frozen=True)
class CalibrationPolicy:
    tree: CalibrationConfig = field(default_factory=CalibrationConfig)   # tree.k: tokens kept per position
    vocab: int = 4096     # rank the prompt's own tokens + the first ``vocab`` ids (0: every id)

    @property
    def topk(self) -> int:
        return self.tree.k


# Trees sized by the cost curve (every calibrating method but hexa-fill) rank the first 1,024 ids,
# not 4,096: calibration's share of a prefill is what these ids cost (SmolLM2-135M Q4_K_M,
# 1,487-token prompt: 78 ms of ~2.8 s with 4,096, 35 with 1,024; Qwen2.5-1.5B's widths at 4 layers
# 175 and 77 of ~3.3 s), and the trees accepted as much (the embedded model, 24 dev prompts with
# --history: 1.41 tokens a step both ways, 1.36 without calibration, 1.37 with 256 ids; AMD Zen 3,
# 2026-12-02). On short answers that share of the prefill is more than calibration gains back.
DEFAULT = CalibrationPolicy(vocab=1024)
# For trees that fill a 32-token budget (``hexa-fill``, a static graph): more and less likely
# paths. Replaying the drafter on recorded dev outputs (summary, rag), they accept ~8% more per
# verification there than the default, and nothing more in the few-token trees a CPU's cost
# curve allows, where building them would only cost time (< 0.3 ms per prompt token).
WIDE = CalibrationPolicy(CalibrationConfig(p_threshold=0.03, min_cum=0.01, max_nodes=64))


def calibration_for(spec: MethodSpec | None) -> CalibrationPolicy | None:
    """The calibration a method runs, or None for one that does not calibrate."""
    if spec is None or not spec.calibration:
        return None
    return WIDE if spec.fill else DEFAULT


def calibration_head(model: Backend, ids: Sequence[int], first_ids: int
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The output-projection rows calibration ranks besides the ``first_ids`` lowest ids (BPE
    merge order: the frequent words and punctuation, ranked by ``model.head_logits``): the
    prompt's own tokens past them, as (their ids, their rows), or (None, None) if there are none.
    ``first_ids`` 0 ranks every id with the model's own head.

    Calibration needs the model's top next tokens at *every* prompt position; the full
    vocabulary (49k rows for SmolLM2) made that ~2 ms and ~60 MFLOP per prompt token, more than
    the rest of the forward. Drafts copied or paraphrased from the context are almost always
    prompt tokens or common ones, and probabilities normalised over the subset only overestimate
    (the drafter rescales each source by its observed acceptance). Lossless either way: drafts
    only steer what is verified.
    """
    V = model.lm_head.shape[0]
    if first_ids <= 0 or first_ids >= V:
        return None, None
    extra = sorted({t for t in ids if first_ids <= t < V})
    if not extra:
        return None, None
    extra_ids = np.array(extra, dtype=np.int64)
    return extra_ids, model.lm_head[extra_ids]


class TopKView:
    """The model's top next tokens at every prompt position, gathered chunk by chunk in prefill."""

    def __init__(self, model: Backend, prompt_ids: Sequence[int], policy: CalibrationPolicy):
        self.model, self.k = model, policy.topk
        V = model.lm_head.shape[0]
        self.first = policy.vocab if 0 < policy.vocab < V else 0   # 0: every id, the model's own head
        extra_ids, self.extra = calibration_head(model, prompt_ids, self.first)
        self.vocab = None if not self.first else \
            np.arange(self.first, dtype=np.int64) if extra_ids is None else \
            np.concatenate([np.arange(self.first, dtype=np.int64), extra_ids])
        self._ids: list[np.ndarray] = []
        self._probs: list[np.ndarray] = []
        self._scratch: np.ndarray | None = None   # the chunk's probabilities, reused (``add``)

    def add(self, hidden: np.ndarray) -> None:
        """The final hidden states of one prefill chunk."""
        if not self.first:
            scores, extra = self.model.logits(hidden), None
        else:
            scores = self.model.head_logits(hidden, self.first)
            extra = None if self.extra is None else self.model.linear(hidden, self.extra)
        if self.model.softmax_topk is not None:
            # one native pass per row: 0.6 ms of a 256-token chunk where numpy's softmax and
            # top_by_blocks took 3.4-4.8 (SmolLM2, Gemma-3-270M: ~4,500 ranked ids; 2026-11-29)
            n = scores.shape[1] + (0 if extra is None else extra.shape[1])
            p, i = self.model.softmax_topk(scores, extra, min(self.k, n))
        else:
            p, i = top_by_blocks(self._probabilities(scores, extra), self.k)       # largest first
        self._ids.append(i if self.vocab is None else self.vocab[i])
        self._probs.append(p)

    def _probabilities(self, scores: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
        """softmax over each row of [scores | extra], in numpy."""
        if extra is None and not self.first:
            return softmax_in_place(scores)     # a fresh array: normalised in place
        S, n = scores.shape[0], scores.shape[1] + (0 if extra is None else extra.shape[1])
        if self._scratch is None or self._scratch.shape[1] != n or self._scratch.shape[0] < S:
            self._scratch = np.empty((max(S, 256), n), dtype=np.float32)
        # one buffer for every chunk: a fresh 4 MB array a chunk (and softmax's copy of it)
        # cost ~8 ms of page faults, a quarter of what calibration adds to a 256-token chunk
        probs = self._scratch[:S]
        probs[:, :scores.shape[1]] = scores
        if extra is not None:
            probs[:, scores.shape[1]:] = extra
        return softmax_in_place(probs)

    def result(self) -> tuple[np.ndarray, np.ndarray] | None:
        """([T, k] ids, [T, k] probabilities) over the chunks added so far; None if none was."""
        if not self._ids:
            return None
        return np.concatenate(self._ids), np.concatenate(self._probs)


def top_by_blocks(x: np.ndarray, k: int, block: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """``topk`` of each row of ``x`` [R, n] through its blocks of ``block`` columns: the k largest
    values lie in the k blocks with the largest maxima, so only those blocks' k*block values are
    ranked (a 256 x 8,900 prefill chunk: ~4 ms against 24 for ``np.argpartition`` over every
    column; torch's topk took 2.9). Among values tied at the k-th place, which are kept may differ
    from ``topk``'s: calibration only steers drafts, so no output depends on it."""
    R, n = x.shape
    if n < 4 * k * block:
        return topk(x, k)
    full = n - n % block
    blocks_of = x[:, :full].reshape(R, -1, block)
    maxima = blocks_of[:, :, 0].copy()
    for j in range(1, block):   # column by column: numpy's max over a short last axis was 3x slower
        np.maximum(maxima, blocks_of[:, :, j], out=maxima)
    if full < n:   # the last, shorter block
        maxima = np.concatenate([maxima, x[:, full:].max(axis=-1, keepdims=True)], axis=1)
    nb = maxima.shape[1]
    blocks = np.sort(np.argpartition(maxima, nb - k, axis=-1)[:, nb - k:], axis=-1)   # columns ascending
    cols = (blocks[:, :, None] * block + np.arange(block)).reshape(R, -1)
    past = cols >= n                     # the last block's columns beyond the row
    values = np.take_along_axis(x, np.minimum(cols, n - 1), axis=-1)
    values[past] = -np.inf
    values, at = topk(values, k)
    return values, np.take_along_axis(cols, at, axis=-1)
