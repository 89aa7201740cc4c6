"""Which arithmetic the torch backend computes with: the library linear behind the options
``linear`` (whose kernel runs the projections) and ``decode`` (decoding's arithmetic on codes),
both given by ``EngineOptions`` (engine/options.py); nothing here reads the environment."""
from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.nn.functional as F

from .. import options as _options

LINEAR_CHOICES, DECODE_CHOICES = _options.LINEAR_CHOICES, _options.DECODE_CHOICES


@functools.cache
def _onednn_linear():
    """oneDNN's fp32 linear (the op inductor's CPU freezing path emits), if this torch build has it.

    Measured on a 2-core AVX2 EPYC over all 120 projection matrices of SmolLM2-135M: MKL's
    ``F.linear`` costs 36 ms for 1 row but 70-82 ms for 2-3 rows (its small-M path), while oneDNN
    costs 28 / 40 / 41 / 46 / 63 ms for 1 / 2 / 4 / 8 / 16 rows: a cheaper plain step and a far
    flatter verification cost curve. Same fp32 arithmetic; batch invariance is checked by the
    engine tests (tree logits == sequential logits, 0 greedy mismatches).
    """
    try:
        op = torch.ops.mkldnn._linear_pointwise
        if not torch.backends.mkldnn.is_available():
            return None
        x, w = torch.randn(3, 8), torch.randn(5, 8)
        if not torch.allclose(op(x, w, None, "none", [], ""), F.linear(x, w), atol=1e-5):
            return None
    except (AttributeError, RuntimeError):
        return None

    def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        return op(x, w, b, "none", [], "")
    return linear


def library_linear(choice: str = "native") -> tuple[Callable, str]:
    """(linear, name) of the library kernel for the ``linear`` option: oneDNN unless ``mkl`` was
    chosen or this torch build lacks it. The native kernels fall back to it for unpacked weights."""
    onednn = None if choice == "mkl" else _onednn_linear()
    return (onednn, "onednn") if onednn is not None else (F.linear, "mkl")
