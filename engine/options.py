"""The engine's advanced knobs, handed to ``Engine.load`` as one object.

The engine reads no environment variable: the app's settings (``app/settings.py``, the
``[engine]`` and ``[qnn]`` tables of config.toml, or the kept ``HEXA_LINEAR``-style variables)
check these values and build an ``EngineOptions``. This module stays light (no torch): the
settings import the choices from here.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import EngineError

LINEAR_CHOICES = ("native", "numpy")
DECODE_CHOICES = ("int8", "exact")
KV_CHOICES = ("auto", "f16", "f32")
PROMPT_CHOICES = ("int8", "bf16")
ISA_CHOICES = ("auto", "avx2", "avx-vnni", "avx512-vnni", "amx", "neon")   # kernels/__init__.py: ISA_FLAGS
SPIN_US_MAX = 1_000_000          # pool.c's bound: a second of spinning is never what is meant
DEFAULT_SPIN_US = 200            # pool.c explains the number


def kv_f16(kv: str, native: bool, exact: bool) -> bool:
    """What the kv option resolves to: fp16 if asked, or for "auto" where the native kernels run
    the layers in int8 arithmetic (``CompactTransformer.kv_dtype``; ``hexa doctor`` says it)."""
    return kv == "f16" or (kv == "auto" and native and not exact)


@dataclass(frozen=True)
class EngineOptions:
    """``linear``: which kernel runs the projections on the CPU backend (``native``: hexa's own
    kernels when they build and pass their self-check, else numpy's fp32 product; ``numpy``: that
    product always).
    ``decode``: the arithmetic of every pass (prefill chunks, steps, trees) on weights held as
    codes (``int8``: integer dot products on 8-bit activations, as llama.cpp; ``exact``: fp32).
    ``isa``: ``auto`` (the best build for the CPU) or one build by name (``avx2`` keeps the AVX2
    kernels on a CPU with VNNI; a build the CPU cannot run is refused at load). ``kv``: the KV
    cache's values (``f16`` halves its memory and what attention reads each step, as llama.cpp
    keeps it; ``auto``: f16 on the native kernels in int8 arithmetic, f32 otherwise). ``spin_us``: how long the
    kernels' pool workers spin after a job before sleeping. qnn: ``qnn_switch`` progressive graph
    switching (None: on unless the layout shares weights), ``qnn_early_switch`` (see
    qnn/blocks.py), ``qnn_shared`` weight-shared context binaries (None: on a Snapdragon only)."""
    linear: str = "native"
    decode: str = "int8"
    isa: str = "auto"
    kv: str = "auto"
    spin_us: int = DEFAULT_SPIN_US
    qnn_switch: bool | None = None
    qnn_early_switch: bool = False
    qnn_shared: bool | None = None
    cc: str | None = None            # the C compiler that builds the kernels (None: cc, gcc or clang on PATH)
    prompt: str = "bf16"             # prompt rows' own arithmetic (bf16 on AMX tiles, per-256 scales on AMD's 512-bit tiles) or decoding's: int8

    def __post_init__(self) -> None:
        # the settings check first and say which file or variable; this guards direct callers
        for name, value, choices in (("linear", self.linear, LINEAR_CHOICES),
                                     ("decode", self.decode, DECODE_CHOICES),
                                     ("isa", self.isa, ISA_CHOICES),
                                     ("kv", self.kv, KV_CHOICES),
                                     ("prompt", self.prompt, PROMPT_CHOICES)):
            if value not in choices:
                raise EngineError(f"engine option {name}={value!r} is not one of {', '.join(choices)}")
        if isinstance(self.spin_us, bool) or not isinstance(self.spin_us, int) \
                or not 0 <= self.spin_us <= SPIN_US_MAX:
            raise EngineError(f"engine option spin_us={self.spin_us!r} is not an integer in 0..{SPIN_US_MAX}")
