"""GGUF quantized tensors to the native kernels' code layouts, block for block, with no fp32 copy.

The kernels read two layouts (``kernels/layout.h``), per panel of 16 output rows and block of 32
inputs: *bits 4* holds fp32 d[16], m[16] and 4-bit codes q (w = d*q + m), *bits 8* holds fp32
d[16] and int8 codes (w = d*q). Every GGUF type below maps into one of them exactly: the weight
the kernels rebuild (d*q, + m) is the weight ggml's dequantization gives, bit for bit but for the
sign of a zero (Q4_0 with d < 0: ggml's (q - 8) * d is -0, d*q - 8d is +0; no product changes)
(``tests/engine/test_gguf_codes.py`` compares them with the ``gguf`` package's dequantize):

| GGUF   | ggml's weight                   | layout | d, m here                                   |
|--------|---------------------------------|--------|---------------------------------------------|
| Q4_0   | d * (q - 8)                     | 4      | d, -8d (both exact)                         |
| Q4_1   | d * q + m                       | 4      | d, m                                        |
| Q4_K   | (d*sc) * q - (dmin*mn), per 32  | 4      | d*sc, -(dmin*mn) (exact: 11 x 6 bits)       |
| Q5_0   | d * (q - 16)                    | 8      | d, codes q - 16 in [-16, 15]                |
| Q8_0   | d * q                           | 8      | d, q                                        |

Others (Q5_1, Q5_K and Q6_K, whose 5/6-bit codes need a min or 16-input scales the layouts do not
have yet; F16/BF16/F32) are dequantized one tensor at a time into fp32 panels (4 bytes a weight).
"""
from __future__ import annotations

import numpy as np

from .kernels import PANEL, QUANT_BLOCK

QB = QUANT_BLOCK
NATIVE = {"Q4_0": 4, "Q4_1": 4, "Q4_K": 4, "Q5_0": 8, "Q8_0": 8}   # GGUF type -> layout bits


def _half(raw: np.ndarray) -> np.ndarray:
    """fp16 bytes (..., 2) -> fp32"""
    return np.ascontiguousarray(raw).view(np.float16)[..., 0].astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """[..., 16] bytes -> [..., 32] codes: low nibbles are inputs 0-15, high nibbles 16-31"""
    return np.concatenate([qs & 15, qs >> 4], axis=-1)


def decode(kind: str, data: np.ndarray, rows: int, K: int):
    """(d [rows, K/32], m [rows, K/32] or None, codes [rows, K]) of a GGUF tensor's raw blocks
    ``data`` (uint8 [rows, bytes per row])."""
    nb = K // QB
    if kind == "Q4_K":
        b = data.reshape(rows, K // 256, 144)
        d, dmin = _half(b[..., 0:2])[..., None], _half(b[..., 2:4])[..., None]
        sc, mn = _k_scales(b[..., 4:16])                       # [rows, K/256, 8]
        qs = b[..., 16:].reshape(rows, K // 256, 4, 32)        # 4 chunks of 64 inputs
        q = np.stack([qs & 15, qs >> 4], axis=3).reshape(rows, K)   # sub-block 2j low, 2j+1 high
        scale = (d * sc.astype(np.float32)).reshape(rows, nb)
        return scale, -(dmin * mn.astype(np.float32)).reshape(rows, nb), q
    size = {"Q4_0": 18, "Q4_1": 20, "Q5_0": 22, "Q8_0": 34}[kind]
    b = data.reshape(rows, nb, size)
    d = _half(b[..., 0:2])
    if kind == "Q4_0":
        return d, d * np.float32(-8), _nibbles(b[..., 2:]).reshape(rows, K)
    if kind == "Q4_1":
        return d, _half(b[..., 2:4]), _nibbles(b[..., 4:]).reshape(rows, K)
    if kind == "Q8_0":
        return d, None, b[..., 2:].view(np.int8).reshape(rows, K)
    qh = np.ascontiguousarray(b[..., 2:6]).view(np.uint32)          # Q5_0: the fifth bits
    high = ((qh >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8) << 4
    q = (_nibbles(b[..., 6:]) | high).astype(np.int16) - 16
    return d, None, q.astype(np.int8).reshape(rows, K)


def _k_scales(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K's 12 bytes -> eight 6-bit scales and mins (ggml's get_scale_min_k4)"""
    s = s.astype(np.uint8)
    sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 15) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
    mn = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
    return sc, mn


def pack(bits: int, d: np.ndarray, m: np.ndarray | None, q: np.ndarray) -> np.ndarray:
    """The layout's bytes (``pack.c``'s hexa_pack_quant fills the same) from per-row d, m, codes."""
    N, K = q.shape
    nb, P = K // QB, -(-N // PANEL)
    pad = P * PANEL - N

    def panels(a: np.ndarray) -> np.ndarray:        # [N, ...] -> [P, 16, ...], zero rows past N
        if pad:
            a = np.concatenate([a, np.zeros((pad,) + a.shape[1:], a.dtype)])
        return a.reshape(P, PANEL, *a.shape[1:])

    head = [panels(d.astype(np.float32)).transpose(0, 2, 1)]          # [P, nb, 16]
    if bits == 4:
        head.append(panels(m.astype(np.float32)).transpose(0, 2, 1))
        c = panels(q.astype(np.uint8).reshape(N, nb, QB))             # [P, 16, nb, 32]
        codes = (c[..., 0::2] | (c[..., 1::2] << 4)).transpose(0, 2, 3, 1)   # [P, nb, 16 pairs, 16]
    else:
        codes = panels(q.astype(np.int8).reshape(N, nb, QB)).transpose(0, 2, 3, 1).view(np.uint8)
    parts = [np.ascontiguousarray(h).view(np.uint8) for h in head] + [codes.reshape(P, nb, -1)]
    return np.ascontiguousarray(np.concatenate(parts, axis=-1)).reshape(-1)


def rebuild(bits: int, d: np.ndarray, m: np.ndarray | None, q: np.ndarray) -> np.ndarray:
    """The weights the kernels rebuild from (d, m, q): d*q, then + m (fp32, in that order)."""
    N, K = q.shape
    w = np.repeat(d, QB, axis=1) * q.astype(np.float32)
    return w + np.repeat(m, QB, axis=1) if bits == 4 else w
