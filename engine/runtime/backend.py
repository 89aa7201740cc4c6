"""What the generation loop, the engine and the cost profiler may ask of a runtime.

Two runtimes implement it: ``transformer.CompactTransformer`` (the CPU: native kernels or numpy, dynamic shapes)
and ``qnn.runtime.QnnTransformer`` (static-shape graphs on the HTP). Everything here is explicit
on both, so callers never probe a model with ``getattr``: the CPU runtime has no-op prefill
hooks, no switch status and no static decoding lengths.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    import numpy as np

    from .kv_cache import KVCache
    from ..model.config import ModelConfig


class SwitchStatus(Protocol):
    """Progressive graph switching during a prefill (docs/architecture.md, technique 1)."""
    switched: int          # blocks already holding their decoding graphs
    total: int
    exposed_ms: float      # time this request waited for graph loads


class Backend(Protocol):
    config: ModelConfig
    kernel: str                    # what computes the layers, for `hexa doctor`, bench and profiles
    kernel_build: str              # a digest of the native kernels' sources ("" if none)
    lm_head: object                # the output projection, [vocab, hidden]; rows index like a tensor
    linear: Callable[..., np.ndarray]   # linear(x, w, b=None) = x @ w.T + b, on lm_head rows too
    max_draft: int                 # most draft tokens one verification may feed
    prefill_graph: str             # the graph label prefill events report
    decode_lengths: tuple[int, ...]   # a static-shape backend's decoding graph lengths; () if dynamic
    # softmax_topk(scores, extra, k) -> (probs, ids) [S, k]: the k most probable columns of each row
    # of [scores | extra] (extra may be None), in native code; None where there is none (numpy ranks)
    softmax_topk: Callable[..., tuple[np.ndarray, np.ndarray]] | None

    def new_cache(self, capacity: int) -> KVCache:
        """A KV cache for ``capacity`` positions (a static backend may refuse or round it)."""

    def forward(self, tokens: np.ndarray, positions: np.ndarray, cache: KVCache,
                mask: np.ndarray | None = None) -> np.ndarray:
        """Hidden states [S, hidden] of ``tokens`` at ``positions``; their K/V pending in ``cache``."""

    def logits(self, hidden: np.ndarray) -> np.ndarray:
        """Next-token logits [S, vocab]."""

    def head_logits(self, hidden: np.ndarray, rows: int) -> np.ndarray:
        """Approximate logits [S, rows] over the first ``rows`` ids, for calibration's ranking."""

    def begin_prefill(self, total_tokens: int) -> None:
        """A prefill of ``total_tokens`` starts (a static backend plans its graph switches)."""

    def answer_rows(self) -> None:
        """The prefill's remaining rows continue an answer (a migrated one): computed as decoding
        computed them, so that the answer goes on as it would have."""

    def end_prefill(self) -> None:
        """The prefill ended, completed or not."""

    @property
    def switch_status(self) -> SwitchStatus | None:
        """Graph switching progress, or None for a backend that does not switch graphs."""
