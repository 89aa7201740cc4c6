"""Which arithmetic the torch backend computes with: the knobs ``HEXA_LINEAR`` (whose kernel runs
the projections) and ``HEXA_DECODE`` (decoding's arithmetic on codes), each read in one place."""
from __future__ import annotations

import functools
import os
from typing import Callable

import torch
import torch.nn.functional as F

from .errors import EngineError

LINEAR_CHOICES = ("native", "onednn", "mkl")


def linear_choice() -> str:
    """``HEXA_LINEAR``, the one place it is read: which kernel computes the projections on the
    torch backend. ``native`` (default): hexa's own kernels (``engine/kernels``) when they build
    and pass their self-check, else oneDNN; ``onednn``: oneDNN's linear; ``mkl``: ``F.linear``."""
    value = os.environ.get("HEXA_LINEAR", "").strip().lower() or "native"
    if value not in LINEAR_CHOICES:
        raise EngineError(f"HEXA_LINEAR={value} is not one of {', '.join(LINEAR_CHOICES)}")
    return value


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


DECODE_CHOICES = ("int8", "exact")


def decode_choice() -> str:
    """``HEXA_DECODE``, the one place it is read: the arithmetic of decoding steps and draft trees
    on weights held as Q4_1/Q8_0 codes. ``int8`` (default): integer dot products on 8-bit
    activations, as llama.cpp decodes the same GGUF; ``exact``: the fp32 weights' arithmetic, as
    prefill always is (the reference transformers computes). Lossless either way: plain and
    speculative decoding share it, and a row never depends on the batch."""
    value = os.environ.get("HEXA_DECODE", "").strip().lower() or "int8"
    if value not in DECODE_CHOICES:
        raise EngineError(f"HEXA_DECODE={value} is not one of {', '.join(DECODE_CHOICES)}")
    return value


def library_linear(choice: str = "native") -> tuple[Callable, str]:
    """(linear, name) of the library kernel for a ``linear_choice()``: oneDNN unless ``mkl`` was
    chosen or this torch build lacks it. The native kernels fall back to it for unpacked weights."""
    onednn = None if choice == "mkl" else _onednn_linear()
    return (onednn, "onednn") if onednn is not None else (F.linear, "mkl")
