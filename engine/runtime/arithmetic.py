"""Which arithmetic the CPU runtime computes with: the library linear behind the options
``linear`` (whose kernel runs the projections) and ``decode`` (decoding's arithmetic on codes),
both given by ``EngineOptions`` (engine/options.py); nothing here reads the environment."""
from __future__ import annotations

from typing import Callable

from .. import options as _options
from . import reference

LINEAR_CHOICES, DECODE_CHOICES = _options.LINEAR_CHOICES, _options.DECODE_CHOICES


def library_linear() -> tuple[Callable, str]:
    """(linear, name) of the library kernel: numpy's fp32 product (its BLAS). The native kernels
    fall back to it for weights they did not pack (a calibration head subset); ``linear =
    "numpy"`` runs every product on it. (torch's oneDNN and MKL linears were the choices here
    until the engine stopped importing torch: ~226 MB resident for two fallbacks.)"""
    return reference.linear, "numpy"
