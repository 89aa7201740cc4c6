"""What a model will hold in memory, known before it is loaded, and a one-line refusal when that
cannot fit: a GGUF whose weights are types hexa keeps as fp32 panels (F16/BF16/F32 matrices,
TQ1_0/TQ2_0: 4 bytes a weight, 6-12x their size in the file) would otherwise be packed until the
OOM killer ends the process, with no word of why (or, on a phone, take the app down)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from ..errors import EngineError
from .gguf_codes import HALF_TYPES, NATIVE, PANEL, decode, k_factors, pack

SAMPLE_ROWS = 64   # rows of a tensor packed to learn its bytes a row (4 panels)


def packed_bytes(r) -> tuple[int, dict[str, int]]:
    """(bytes every tensor of the GGUF reader ``r`` takes once loaded, of those the bytes held as
    fp32 panels by GGUF type). A tensor kept as codes is measured by packing its first rows as the
    load packs them (its layout's real bytes a row, compact head included); the fused projections
    (q|k|v, gate|up) are packed per tensor here, so a mix of types in one (Q4_K_M's q, k in Q4_K
    and v in Q6_K: layout 7) takes somewhat more than this when loaded."""
    total, fp32 = 0, Counter()
    for t in r.tensors:
        dims = [int(x) for x in t.shape]
        if len(dims) < 2:                  # norms, biases, RoPE factors: fp32 vectors
            total += 4 * int(np.prod(dims))
            continue
        K, N = dims[0], int(np.prod(dims[1:]))
        kind = t.tensor_type.name
        bits = NATIVE.get(kind)
        if kind in HALF_TYPES:             # 2-byte panels
            total += 2 * -(-N // PANEL) * PANEL * K
            continue
        if bits is None or K % 32:
            fp32[kind] += 4 * N * K
            continue
        rows = min(N, SAMPLE_ROWS)
        data = t.data[:rows]
        codes, _ = pack(bits, *decode(kind, data, rows, K), k=k_factors(kind, data, rows, K))
        total += codes.nbytes * N // rows
    return total + sum(fp32.values()), dict(fp32)


def kv_bytes(config, window: int, f16: bool) -> int:
    """One request's KV cache at the full context window (``KVCache``: keys and values per layer)."""
    return 2 * config.num_layers * config.num_kv_heads * config.head_dim * window * (2 if f16 else 4)


def check_fits(label: str, weights: int, kv: int, available: int | None,
               fp32: dict[str, int] | None = None) -> None:
    """EngineError in one line when ``weights`` + ``kv`` bytes exceed ``available`` (None: not
    known here, nothing is checked), naming the types that take 4 bytes a weight."""
    if available is None or weights + kv <= available:
        return
    gb = lambda n: f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"   # noqa: E731
    why = ""
    if fp32:
        kinds = sorted(fp32, key=fp32.get, reverse=True)
        why = (f"; {gb(sum(fp32.values()))} of it {'/'.join(kinds)} weights, which hexa keeps as fp32 "
               "(use a Q4_K_M, Q5_K_M, Q6_K, Q8_0 or Q4_0 file)")
    if kv > weights:   # a long context window's cache: a shorter one fits
        why += "; a shorter --context takes a smaller KV cache"
    raise EngineError(f"{label}: needs about {gb(weights + kv)} of memory (weights {gb(weights)}, "
                      f"KV cache {gb(kv)}) where {gb(available)} is available{why}")
