"""GGUF quantized tensors to the native kernels' code layouts, block for block, with no fp32 copy.

The kernels read these layouts (``kernels/layout.h``), per panel of 16 output rows and block of 32
inputs: *bits 4* holds fp32 d[16], m[16] and 4-bit codes q (w = d*q + m), *bits 8* holds fp32
d[16] and int8 codes (w = d*q), *bits 5, 6, 9* hold 5- and 6-bit codes as planes (the low nibbles
as bits 4's, then the high bits; each code stored as q + an offset >= 0), *bits 3* 4-bit codes
q + 8 with a d per 16 inputs (layout 6's heads, layout 4's nibbles), *bits 2* 4-bit codes with
a d and an m per 16 inputs (Q2_K's mins are per 16), *bits 10, 11* nibbles that
index a table of 16 int8 values (``table``: IQ4's, the grids' values with a sign) after 8's head
and 7's. Every GGUF type below
maps into one of them exactly: the weight
the kernels rebuild (d*q, + m) is the weight ggml's dequantization gives, bit for bit but for the
sign of a zero (Q4_0 with d < 0: ggml's (q - 8) * d is -0, d*q - 8d is +0; no product changes)
(``tests/engine/test_gguf_codes.py`` compares them with the ``gguf`` package's dequantize):

| GGUF   | ggml's weight                   | layout | d, m here                                   |
|--------|---------------------------------|--------|---------------------------------------------|
| Q4_0   | d * (q - 8)                     | 4      | d, -8d (both exact)                         |
| Q4_1   | d * q + m                       | 4      | d, m                                        |
| Q4_K   | (d*sc) * q - (dmin*mn), per 32  | 4      | d*sc, -(dmin*mn) (exact: 11 x 6 bits)       |
| Q5_0   | d * (q - 16)                    | 9      | d, codes q - 16 in [-16, 15]                |
| Q8_0   | d * q                           | 8      | d, q                                        |
| Q5_1   | d * q + m                       | 5      | d, m; codes 0..31                           |
| Q5_K   | (d*sc) * q - (dmin*mn), per 32  | 5      | d*sc, -(dmin*mn); codes 0..31               |
| Q6_K   | (d*sc) * (q - 32), per 16       | 6      | d*sc of inputs 0-15, of 16-31; codes q - 32 |
| Q3_K   | (d*(sc-32)) * q, q in -4..3, per 16 | 3  | as Q6_K; codes q + 8 as nibbles alone      |
| Q2_K   | (d*sc) * q - (dmin*mn), per 16  | 2      | each half's d*sc and -(dmin*mn); codes 0..3 |
| IQ4_NL | d * table[q], per 32            | 10     | d; codes table[q] (ggml's 16 int8 values)   |
| IQ4_XS | (d*(sc-32)) * table[q], per 32  | 10     | d*(sc-32); codes table[q]                   |
| IQ3_S  | (d*(1+2sc)) * grid * sign, per 32 | 4    | grid * sign = 2u - 15: 2d*(1+2sc), -15d*(1+2sc), u |
| IQ3_XXS| (d*(0.5+sc)*0.5) * grid * sign  | 10     | the same per 32; codes grid * sign          |
| IQ2_XXS| (d*(0.5+sc)*0.25) * grid * sign | 10     | the same per 32; codes grid * sign          |
| IQ2_XS, IQ2_S | the same, per 16         | 11     | the scales of inputs 0-15, of 16-31; m 0    |
| IQ1_S  | (d*(1+2sc)) * (grid + delta)    | 10     | d/8*(1+2sc); codes 8 * grid +- 1 (-9 .. 9)  |
| IQ1_M  | the same, per 16 (delta per 8)  | 11     | as IQ2_XS; codes 8 * grid +- 1              |

(Q3_K takes 4 bits a code, 0.59 bytes a weight for the GGUF's 0.43, Q2_K 0.69 for 0.33: 4 bits
a code and four int8 head values a column and block; the IQ types' codes take 16
values or fewer, each a 4-bit index into its table: 0.55-0.56 bytes a weight for IQ4 (the GGUF's
0.53-0.56), 0.55 for IQ3_XXS (0.38), 0.55-0.64 for IQ2 (0.26-0.32) and IQ1 (0.20-0.22), where
Q8_0's bytes took 1.05-1.14 and fp32 panels 4. IQ3_S's values are 2u - 15: Q4_K's layout, 0.59 for
0.43, so an IQ3_M file's q/k/v of IQ3_S and Q4_K parts stays 4-bit codes. ``decode`` gives the
codes' values (IQ3_S's u); ``pack`` writes table codes' indices. Their grids and sign tables are the
gguf package's.)

(A projection fused of parts of layouts 8, 9 and 10 is packed in 8, of Q2_K with Q3_K or 4-bit parts
(a Q2_K file's q, k and v) in 2 (``as_layout2``), of other mixes in 7: bytes after three fp32 arrays,
``layout.h``; Q2_K with 5- to 8-bit parts, which no layout holds exactly, as fp32 panels.) F16/BF16/F32 tensors are
dequantized one tensor at a time into fp32 panels (4 bytes a weight): hexa's small ones (norms,
biases) and any type not in this table.

The heads are stored compactly where that is exact (``layout.h``, ``pack``): the legacy types'
d and m are fp16 values (HEAD_F16: 0.625 bytes a Q4_1 weight instead of 0.75), and the K-quants'
are an fp16 factor per 256 inputs times a 6- or 8-bit integer per block (HEAD_K: 0.59 bytes a
Q4_K weight instead of 0.75, 1.07 a Q6_K weight instead of 1.25). The kernels rebuild the same
fp32 values, so the bits out of every product are those of the fp32 head.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..runtime.kernels import HEADER, PANEL, QUANT_BLOCK

QB = QUANT_BLOCK
HEAD_F16, HEAD_K = HEADER.constants["HEXA_HEAD_F16"], HEADER.constants["HEXA_HEAD_K"]
KSUPER = HEADER.constants["HEXA_KSUPER"]        # blocks per HEAD_K factor
TABLE_SHIFT = HEADER.constants["HEXA_TABLE_SHIFT"]
# the table codes' tables (layout.h's CODE_TABLE, by number): the types whose codes index them
TABLE_OF = {"IQ4_NL": 0, "IQ4_XS": 0, "IQ3_XXS": 1, "IQ2_XXS": 2, "IQ2_XS": 2, "IQ2_S": 2,
            "IQ1_S": 3, "IQ1_M": 3}
NATIVE = {"Q4_0": 4, "Q4_1": 4, "Q4_K": 4, "Q5_0": 9, "Q8_0": 8, "Q5_1": 5, "Q5_K": 5, "Q6_K": 6,
          "Q3_K": 3, "Q2_K": 2, "IQ4_NL": 10, "IQ4_XS": 10, "IQ3_S": 4, "IQ3_XXS": 10, "IQ2_XXS": 10,
          "IQ2_XS": 11, "IQ2_S": 11, "IQ1_S": 10, "IQ1_M": 11}   # -> layout (| the table's number for 10, 11)
NATIVE = {kind: b | TABLE_OF[kind] << TABLE_SHIFT if kind in TABLE_OF else b for kind, b in NATIVE.items()}
# F16 / BF16 matrices: 2-byte panels of their values (bf16 as its bits), widened exactly by the kernels
HALF_TYPES = {"F16": np.float16, "BF16": np.uint16}
K_HEADS = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS",   # a factor per 256 inputs times a small integer per block
           "IQ3_S", "IQ3_XXS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M")
IQ4_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.int8)  # ggml's kvalues_iq4nl
# what a GGUF's packed file was made with beyond the kernels' build: a file packed before a type
# was mapped here holds that type as fp32 panels, and a start with the mapping packs it again
MAPPING = "m" + hashlib.sha256(repr(sorted(NATIVE.items())).encode()).hexdigest()[:6]
PLANES = {5: 1, 9: 1, 6: 2}            # layout.h's PLANES: high bits per code beyond the nibble
OFFSET = {5: 0, 9: 16, 6: 32, 3: 8}    # ... and CODE_OFFSET: a plane code (or layout 3's nibble) holds q + this
SPLIT = (2, 3, 6, 7, 11)               # layouts with a scale per 16 inputs (SPLIT_SCALE)
NIBBLES = (2, 3, 4, 5, 6, 9, 10, 11)   # codes as nibbles (+ planes), else bytes
# layout 2 (Q2_K): an m per 16 inputs as well; its d and m are [rows, K/32, 2], each half block's


def layout(bits: int) -> int:
    """the code layout of a packed weight's bits (layout.h's CODES)"""
    return bits & 15


def table(bits: int) -> np.ndarray:
    """the 16 int8 values table codes ``bits`` index (layout.h's CODE_TABLE, from the GGUF's own
    values: IQ4's kvalues, the grids' values with a sign, padded with 0)"""
    number = bits >> TABLE_SHIFT & 7
    if number == 0:
        return IQ4_VALUES
    kind = next(k for k, n in TABLE_OF.items() if n == number)
    grid = np.unique(_grid(kind)[0]).astype(np.int16)
    if kind in IQ1:   # grid -1, 0, 1 plus a delta of +-1/8: 8 * grid +- 1
        values = np.unique(np.concatenate([8 * grid - 1, 8 * grid + 1]))
    else:             # magnitudes with a sign
        values = np.concatenate([-grid[::-1], grid])
    return np.concatenate([values, np.zeros(16 - len(values), np.int16)]).astype(np.int8)


def _table_index(bits: int, q: np.ndarray) -> np.ndarray:
    """codes q (each a value of bits' table) -> their indices"""
    t = table(bits)
    index = np.full(256, 255, np.uint8)
    index[t[::-1].astype(np.int16) + 128] = np.arange(15, -1, -1, dtype=np.uint8)   # the first index of a value
    u = index[q.astype(np.int16) + 128]
    if (u == 255).any():
        raise ValueError(f"a code is no value of table {bits >> TABLE_SHIFT & 7}")
    return u


def _half(raw: np.ndarray) -> np.ndarray:
    """fp16 bytes (..., 2) -> fp32"""
    return np.ascontiguousarray(raw).view(np.float16)[..., 0].astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """[..., 16] bytes -> [..., 32] codes: low nibbles are inputs 0-15, high nibbles 16-31"""
    return np.concatenate([qs & 15, qs >> 4], axis=-1)


def decode(kind: str, data: np.ndarray, rows: int, K: int):
    """(d [rows, K/32], m [rows, K/32] or None, codes [rows, K]) of a GGUF tensor's raw blocks
    ``data`` (uint8 [rows, bytes per row]); for Q6_K and Q3_K (layouts 6, 3) m is the scale of each block's
    inputs 16-31 and d that of inputs 0-15; for Q2_K (layout 2) d and m are [rows, K/32, 2], each
    half block's scale and m."""
    nb = K // QB
    if kind == "Q2_K":   # per 128 inputs 32 bytes, 4 shifts of 2 bits; a scale and min nibble per 16
        b = data.reshape(rows, K // 256, 84)
        j = np.arange(4, dtype=np.uint8)[:, None]
        q = ((b[..., 16:80].reshape(rows, -1, 2, 1, 32) >> (2 * j)) & 3).astype(np.int8).reshape(rows, K)
        d, dmin = _half(b[..., 80:82])[..., None], _half(b[..., 82:84])[..., None]
        sc, mn = (b[..., 0:16] & 15).astype(np.float32), (b[..., 0:16] >> 4).astype(np.float32)
        return (d * sc).reshape(rows, nb, 2), -(dmin * mn).reshape(rows, nb, 2), q
    if kind in GRIDS:
        db, q = _grid_codes(kind, data.reshape(rows, K // 256, -1))
        if kind == "IQ3_S":   # odd values -15 .. 15 = 2u - 15: Q4_K's layout, d*(2u - 15) = 2d*u - 15d exactly
            db = db.reshape(rows, nb)
            return 2 * db, -15 * db, ((q.astype(np.int16) + 15) // 2).astype(np.int8).reshape(rows, K)
        if layout(NATIVE[kind]) in SPLIT:                               # IQ2_XS, IQ2_S: a scale per 16 inputs
            db = db.reshape(rows, nb, 2)
            return np.ascontiguousarray(db[..., 0]), np.ascontiguousarray(db[..., 1]), q.reshape(rows, K)
        return db.reshape(rows, nb), None, q.reshape(rows, K)
    if kind == "Q3_K":
        b = data.reshape(rows, K // 256, 110)
        hm, qs = b[..., 0:32], b[..., 32:96].reshape(rows, -1, 2, 1, 32)   # qs: per half of 128 inputs
        j = np.arange(4, dtype=np.uint8)[:, None]                            # 4 shifts of 2 bits a half
        hm = hm[..., None, :]
        high = np.stack([(hm >> j) & 1, (hm >> (j + 4)) & 1], axis=2)      # [rows, S, 2, 4, 32]: bit 4h + j
        q = ((qs >> (2 * j)) & 3).astype(np.int8) - 4 * (1 - high).astype(np.int8)
        d = _half(b[..., 108:110])[..., None]
        scale = (d * _q3_scales(b[..., 96:108]).astype(np.float32)).reshape(rows, nb, 2)
        return np.ascontiguousarray(scale[..., 0]), np.ascontiguousarray(scale[..., 1]), q.reshape(rows, K)
    if kind == "IQ4_XS":
        b = data.reshape(rows, K // 256, 136)
        d = _half(b[..., 0:2])[..., None]
        q = IQ4_VALUES[_nibbles(b[..., 8:].reshape(rows, -1, 16))].reshape(rows, K)
        return (d * _iq4_scales(b).astype(np.float32)).reshape(rows, nb), None, q
    if kind == "Q6_K":
        b = data.reshape(rows, K // 256, 210)
        ql, qh = b[..., 0:128].reshape(rows, -1, 2, 64), b[..., 128:192].reshape(rows, -1, 2, 32)
        lo, hi = ql[..., :32], ql[..., 32:]                             # per half of 128 inputs
        parts = [(lo & 15) | ((qh & 3) << 4), (hi & 15) | (((qh >> 2) & 3) << 4),
                 (lo >> 4) | (((qh >> 4) & 3) << 4), (hi >> 4) | (((qh >> 6) & 3) << 4)]
        q = (np.stack(parts, axis=3).astype(np.int16) - 32).astype(np.int8).reshape(rows, K)
        d = _half(b[..., 208:210])[..., None]
        scale = (d * b[..., 192:208].view(np.int8).astype(np.float32)).reshape(rows, nb, 2)   # per 16 inputs
        return np.ascontiguousarray(scale[..., 0]), np.ascontiguousarray(scale[..., 1]), q
    if kind == "Q5_K":
        b = data.reshape(rows, K // 256, 176)
        d, dmin = _half(b[..., 0:2])[..., None], _half(b[..., 2:4])[..., None]
        sc, mn = _k_scales(b[..., 4:16])
        qh = b[..., 16:48][..., None, :]                               # [rows, S, 1, 32]
        qs = b[..., 48:].reshape(rows, K // 256, 4, 32)
        bit = lambda j: ((qh >> j) & 1) << 4                           # noqa: E731
        j = np.arange(4, dtype=np.uint8)[:, None]
        q = np.stack([(qs & 15) | bit(2 * j), (qs >> 4) | bit(2 * j + 1)], axis=3).reshape(rows, K)
        return ((d * sc.astype(np.float32)).reshape(rows, nb), -(dmin * mn.astype(np.float32)).reshape(rows, nb),
                q.astype(np.int8))
    if kind == "Q4_K":
        b = data.reshape(rows, K // 256, 144)
        d, dmin = _half(b[..., 0:2])[..., None], _half(b[..., 2:4])[..., None]
        sc, mn = _k_scales(b[..., 4:16])                       # [rows, K/256, 8]
        qs = b[..., 16:].reshape(rows, K // 256, 4, 32)        # 4 chunks of 64 inputs
        q = np.stack([qs & 15, qs >> 4], axis=3).reshape(rows, K)   # sub-block 2j low, 2j+1 high
        scale = (d * sc.astype(np.float32)).reshape(rows, nb)
        return scale, -(dmin * mn.astype(np.float32)).reshape(rows, nb), q
    size = {"Q4_0": 18, "Q4_1": 20, "Q5_0": 22, "Q8_0": 34, "Q5_1": 24, "IQ4_NL": 18}[kind]
    b = data.reshape(rows, nb, size)
    d = _half(b[..., 0:2])
    if kind == "Q4_0":
        return d, d * np.float32(-8), _nibbles(b[..., 2:]).reshape(rows, K)
    if kind == "Q4_1":
        return d, _half(b[..., 2:4]), _nibbles(b[..., 4:]).reshape(rows, K)
    if kind == "Q8_0":
        return d, None, b[..., 2:].view(np.int8).reshape(rows, K)
    if kind == "IQ4_NL":
        return d, None, IQ4_VALUES[_nibbles(b[..., 2:])].reshape(rows, K)
    if kind == "Q5_1":
        qh = np.ascontiguousarray(b[..., 4:8]).view(np.uint32)
        high = ((qh >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8) << 4
        return d, _half(b[..., 2:4]), (_nibbles(b[..., 8:]) | high).astype(np.int8).reshape(rows, K)
    qh = np.ascontiguousarray(b[..., 2:6]).view(np.uint32)          # Q5_0: the fifth bits
    high = ((qh >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8) << 4
    q = (_nibbles(b[..., 6:]) | high).astype(np.int16) - 16
    return d, None, q.astype(np.int8).reshape(rows, K)


def k_factors(kind: str, data: np.ndarray, rows: int, K: int):
    """A K-quant's head as (factors [arrays, rows, K/256] fp32, integers [arrays, rows, K/32]
    int8) with factor * integer = the head ``decode`` gives (d*sc and -(dmin*mn); Q6_K and Q3_K
    d*sc of inputs 0-15 and 16-31 of each block; IQ4_XS d*(sc-32)); None for the other types."""
    if kind not in K_HEADS:
        return None
    S = K // 256
    if kind in GRIDS:   # the scale is d * (a + b*sc) = (d * f) * (2sc + 1), or d * (2sc + 1)
        b = data.reshape(rows, S, -1)
        d = _half(b[..., 0:2]) if kind != "IQ1_M" else _iq1m_d(b)
        d, ints = d * np.float32(GRIDS[kind]), _grid_scales(kind, b)
        if kind == "IQ3_S":   # layout 4's d and m (decode)
            return np.stack([2 * d, -15 * d]), np.stack([ints.reshape(rows, -1)] * 2)
        if layout(NATIVE[kind]) in SPLIT:
            ints = ints.reshape(rows, S * 8, 2)
            return np.stack([d, d, d]), np.stack([ints[..., 0], ints[..., 1], np.zeros_like(ints[..., 0])])
        return d[None], ints.reshape(1, rows, -1)
    if kind == "Q2_K":   # layout 2's four arrays: each half's d*sc, then each half's -(dmin*mn)
        b = data.reshape(rows, S, 84)
        d, dmin = _half(b[..., 80:82]), _half(b[..., 82:84])
        sc, mn = (b[..., 0:16] & 15).reshape(rows, S * 8, 2), (b[..., 0:16] >> 4).reshape(rows, S * 8, 2)
        return (np.stack([d, d, -dmin, -dmin]),
                np.stack([sc[..., 0], sc[..., 1], mn[..., 0], mn[..., 1]]).astype(np.int8))
    if kind == "Q3_K":
        b = data.reshape(rows, S, 110)
        d = _half(b[..., 108:110])
        sc = _q3_scales(b[..., 96:108]).reshape(rows, S * 8, 2)
        return np.stack([d, d]), np.stack([sc[..., 0], sc[..., 1]])
    if kind == "IQ4_XS":
        b = data.reshape(rows, S, 136)
        return _half(b[..., 0:2])[None], _iq4_scales(b).reshape(1, rows, -1)
    if kind == "Q6_K":
        b = data.reshape(rows, S, 210)
        d = _half(b[..., 208:210])
        sc = b[..., 192:208].view(np.int8).reshape(rows, S * 8, 2)
        return np.stack([d, d]), np.stack([sc[..., 0], sc[..., 1]])
    b = data.reshape(rows, S, 144 if kind == "Q4_K" else 176)
    sc, mn = _k_scales(b[..., 4:16])
    return (np.stack([_half(b[..., 0:2]), -_half(b[..., 2:4])]),
            np.stack([sc.reshape(rows, -1), mn.reshape(rows, -1)]).astype(np.int8))


def _k_scales(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K's 12 bytes -> eight 6-bit scales and mins (ggml's get_scale_min_k4)"""
    s = s.astype(np.uint8)
    sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 15) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
    mn = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
    return sc, mn


def _q3_scales(s: np.ndarray) -> np.ndarray:
    """Q3_K's 12 bytes -> its sixteen 6-bit scales - 32, as int8 (ggml's dequantize_row_q3_K): the
    low nibbles of bytes 0-7 then their high nibbles, over 2-bit pairs of bytes 8-11"""
    low = np.concatenate([s[..., 0:8] & 15, s[..., 0:8] >> 4], axis=-1)
    i = np.arange(16)
    high = (s[..., 8 + i % 4] >> (2 * (i // 4)).astype(np.uint8)) & 3         # scale i: byte 8 + i % 4
    return ((low | (high << 4)).astype(np.int16) - 32).astype(np.int8)


def _iq4_scales(b: np.ndarray) -> np.ndarray:
    """IQ4_XS's eight 6-bit block scales - 32 per super-block (blocks [..., 136]) as int8"""
    low = np.stack([b[..., 4:8] & 15, b[..., 4:8] >> 4], axis=-1).reshape(*b.shape[:-1], 8)   # block i: byte i/2
    high = (np.ascontiguousarray(b[..., 2:4]).view(np.uint16) >> np.arange(0, 16, 2, dtype=np.uint16)) & 3
    return ((low | (high.astype(np.uint8) << 4)).astype(np.int16) - 32).astype(np.int8)


# The grid types (the gguf package's quants classes of these names): the factor f of d * f * (2sc + 1)
GRIDS = {"IQ3_S": 1.0, "IQ3_XXS": 0.25, "IQ2_XXS": 0.125, "IQ2_XS": 0.125, "IQ2_S": 0.125,
         "IQ1_S": 0.125, "IQ1_M": 0.125}   # IQ1: d * (2sc + 1) * (grid + delta) = d/8 * (2sc + 1) * (8 grid +- 1)
IQ1 = ("IQ1_S", "IQ1_M")


def _grid(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(the grid [rows, width] as int8, the 128 sign bytes) of a grid type, from the gguf package"""
    from gguf import quants
    cls = getattr(quants, kind)
    if cls.grid is None:
        cls.init_grid()
    grid = cls.grid.reshape(cls.grid.shape[-2], cls.grid.shape[-1]).astype(np.int8)
    return grid, np.frombuffer(quants.IQ2_XXS.ksigns, dtype=np.uint8)


def _signs(bits: np.ndarray) -> np.ndarray:
    """sign bytes [...] -> [..., 8] of +1 / -1 (bit j set: value j negative)"""
    return 1 - 2 * ((bits[..., None] >> np.arange(8, dtype=np.uint8)) & 1).astype(np.int8)


def _grid_scales(kind: str, b: np.ndarray) -> np.ndarray:
    """The blocks' 4-bit scales as (2sc + 1) int8, per 32 inputs (per 16 for IQ2_XS / IQ2_S):
    ggml's d*(1+2sc), d*(0.5+sc)*0.5 and d*(0.5+sc)*0.25 are d*f times these"""
    if kind == "IQ1_S":                                                 # bits 12-14 of each 32 inputs' word
        sc = (np.ascontiguousarray(b[..., 34:50]).view(np.uint16) >> 12) & 7
    elif kind == "IQ1_M":                                               # 3 bits per 16 inputs, 4 to a word
        words = np.ascontiguousarray(b[..., 48:56]).view(np.uint16)
        sc = ((words[..., None] >> np.array([0, 3, 6, 9], np.uint16)) & 7).reshape(*words.shape[:-1], 16)
    elif kind == "IQ3_XXS":
        sc = np.ascontiguousarray(b[..., 66:98]).view(np.uint32) >> 28
    elif kind == "IQ2_XXS":
        sc = np.ascontiguousarray(b[..., 2:66]).view(np.uint32)[..., 1::2] >> 28
    else:
        at = {"IQ3_S": 106, "IQ2_XS": 66, "IQ2_S": 74}[kind]
        raw = b[..., at:at + (4 if kind == "IQ3_S" else 8)]
        sc = np.stack([raw & 15, raw >> 4], axis=-1).reshape(*raw.shape[:-1], -1)
    return (2 * sc.astype(np.int16) + 1).astype(np.int8)


def _iq1m_d(b: np.ndarray) -> np.ndarray:
    """IQ1_M's fp16 d: the top 4 bits of its 4 scale words, lowest first"""
    words = np.ascontiguousarray(b[..., 48:56]).view(np.uint16) >> 12
    bits = words[..., 0] | (words[..., 1] << 4) | (words[..., 2] << 8) | (words[..., 3] << 12)
    return np.ascontiguousarray(bits.astype(np.uint16)).view(np.float16).astype(np.float32)


def _grid_codes(kind: str, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scales [rows, S, groups] fp32, codes [rows, S, 256] int8 = grid value * sign) of a grid
    type's super-blocks b [rows, S, bytes] (ggml's dequantize_row_iq*; the weight is scale * code,
    one fp32 product, as ggml's db * grid * sign)"""
    grid, ksigns = _grid(kind)
    rows, S = b.shape[:2]
    d = _half(b[..., 0:2])[..., None] if kind != "IQ1_M" else _iq1m_d(b)[..., None]
    if kind in IQ1:   # codes 8 * grid + 1, or - 1 where the delta is negative; no sign bits
        if kind == "IQ1_S":
            qh = np.ascontiguousarray(b[..., 34:50]).view(np.uint16)               # [rows, S, 8]: per 32 inputs
            high = (qh[..., None] >> np.array([0, 3, 6, 9], np.uint16)) & 7        # [rows, S, 8, 4]
            idx = b[..., 2:34].astype(np.int64) | (high.reshape(rows, S, 32).astype(np.int64) << 8)
            minus = np.repeat((qh >> 15).astype(bool), 32, axis=-1)
        else:
            nib = (b[..., 32:48, None] >> np.array([0, 4], np.uint8)) & 15          # [rows, S, 16, 2]: per 8 inputs
            idx = b[..., 0:32].astype(np.int64) | ((nib & 7).reshape(rows, S, 32).astype(np.int64) << 8)
            minus = np.repeat((nib >> 3).reshape(rows, S, 32).astype(bool), 8, axis=-1)
        q = (8 * grid[idx].astype(np.int16)).reshape(rows, S, 256) + np.where(minus, -1, 1).astype(np.int16)
        return d * np.float32(GRIDS[kind]) * _grid_scales(kind, b).astype(np.float32), q.astype(np.int8)
    if kind == "IQ3_XXS":
        idx = b[..., 2:66].astype(np.int64)                                  # 64 groups of 4
        sw = np.ascontiguousarray(b[..., 66:98]).view(np.uint32)              # [rows, S, 8]
        sign = ksigns[(sw[..., None] >> np.array([0, 7, 14, 21], np.uint32)) & 127]   # [rows, S, 8, 4]
    elif kind == "IQ2_XXS":
        w = np.ascontiguousarray(b[..., 2:66]).view(np.uint32)               # [rows, S, 16]
        idx = np.ascontiguousarray(w[..., 0::2]).view(np.uint8).astype(np.int64)   # 32 groups of 8
        sign = ksigns[(w[..., 1::2, None] >> np.array([0, 7, 14, 21], np.uint32)) & 127]
    elif kind == "IQ2_XS":
        w = np.ascontiguousarray(b[..., 2:66]).view(np.uint16)               # 32 groups of 8
        idx, sign = (w & 511).astype(np.int64), ksigns[w >> 9]
    elif kind == "IQ2_S":
        qh = (b[..., 66:74, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3   # [rows, S, 8, 4]
        idx = b[..., 2:34].astype(np.int64) | (qh.reshape(rows, S, 32).astype(np.int64) << 8)
        sign = b[..., 34:66]
    else:   # IQ3_S
        qh = (b[..., 66:74, None] >> np.arange(8, dtype=np.uint8)) & 1       # [rows, S, 8, 8]
        idx = b[..., 2:66].astype(np.int64) | (qh.reshape(rows, S, 64).astype(np.int64) << 8)
        sign = b[..., 74:106]
    values = grid[idx].reshape(rows, S, 256)
    q = values * _signs(sign).reshape(rows, S, 256)
    return d * np.float32(GRIDS[kind]) * _grid_scales(kind, b).astype(np.float32), q


def as_layout2(bits: int, d: np.ndarray, m: np.ndarray | None, q: np.ndarray, k=None):
    """(d [rows, K/32, 2], m [rows, K/32, 2], codes 0..15, k_factors or None) of a tensor in layout
    ``bits`` (2, 3 or 4) in layout 2, exactly: a Q2_K file fuses Q2_K q and k with a Q3_K or Q4_K v.
    Layout 3's codes q in -8..7 become q + 8 with m = -8d (d*(q + 8) - 8d is d*q: both products
    exact), layout 4's d and m serve both halves."""
    lay = layout(bits)
    if lay == 2:
        return d, m, q, k
    if lay == 3:
        d2 = np.stack([d, m], axis=-1)
        k2 = None if k is None else (np.stack([k[0][0], k[0][1], -8 * k[0][0], -8 * k[0][1]]),
                                     np.stack([k[1][0], k[1][1], k[1][0], k[1][1]]))
        return d2, np.float32(-8) * d2, (q.astype(np.int16) + 8).astype(np.int8), k2
    k2 = None if k is None else (np.stack([k[0][0], k[0][0], k[0][1], k[0][1]]),
                                 np.stack([k[1][0], k[1][0], k[1][1], k[1][1]]))
    return np.stack([d, d], axis=-1), np.stack([m, m], axis=-1), q, k2


def as_layout7(bits: int, d: np.ndarray, m: np.ndarray | None, q: np.ndarray):
    """(d of inputs 0-15, d of inputs 16-31, m, int8 codes) of a tensor in layout ``bits``: layout 7
    holds every other exactly, so a fused projection of parts of several types (Q4_K_M's Q4_K
    q and k with a Q6_K v) stays codes."""
    zero = np.zeros_like(d)
    if layout(bits) in SPLIT:   # a scale per 16 inputs: Q3_K, Q6_K; IQ2_XS, IQ2_S (m 0)
        return d, m, zero, q.astype(np.int8)
    return d, d, (m if layout(bits) in (4, 5) else zero), q.astype(np.int8)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.astype(np.float32).view(np.uint32), b.astype(np.float32).view(np.uint32))


def compact_head(heads: list[np.ndarray], k: tuple[np.ndarray, np.ndarray] | None) -> int:
    """The compact head (HEAD_K, HEAD_F16) that holds ``heads`` ([rows, K/32] fp32 arrays) exactly,
    or 0: HEAD_K when ``k`` (``k_factors``) rebuilds them bit for bit, HEAD_F16 when every value is
    an fp16 value (a -0 included)."""
    if k is not None:
        factors, ints = k
        rebuilt = np.repeat(factors, KSUPER, axis=2) * ints.astype(np.float32)
        if all(_same_bits(r, h) for r, h in zip(rebuilt, heads)):
            return HEAD_K
    if all(_same_bits(h.astype(np.float16).astype(np.float32), h) for h in heads):
        return HEAD_F16
    return 0


def pack(bits: int, d: np.ndarray, m: np.ndarray | None, q: np.ndarray, m2: np.ndarray | None = None,
         k: tuple[np.ndarray, np.ndarray] | None = None, compact: bool = True) -> tuple[np.ndarray, int]:
    """(the layout's bytes, its bits) from per-row d, m, codes (``pack.c``'s hexa_pack_quant fills
    the same for an fp32 head); layout 7 takes (d, d of inputs 16-31 as m, m as m2). The head is
    compact where that is exact (``compact_head``; ``k`` a K-quant's ``k_factors``) unless not
    ``compact``."""
    N, K = q.shape
    nb, P = K // QB, -(-N // PANEL)
    pad = P * PANEL - N

    def panels(a: np.ndarray) -> np.ndarray:        # [N, ...] -> [P, 16, ...], zero rows past N
        if pad:
            a = np.concatenate([a, np.zeros((pad,) + a.shape[1:], a.dtype)])
        return a.reshape(P, PANEL, *a.shape[1:])

    lay = layout(bits)
    if lay in (7, 11) and m2 is None:   # IQ2_XS / IQ2_S: a scale per 16 inputs and no m
        m2 = np.zeros_like(d)
    if lay == 2:                        # each half's d, then each half's m
        arrays = [d[..., 0], d[..., 1], m[..., 0], m[..., 1]]
    else:
        arrays = [d] + ([m] if lay not in (8, 9, 10) else []) + ([m2] if lay in (7, 11) else [])   # layout.h's HEAD_N
    arrays = [a.astype(np.float32) for a in arrays]
    kind = compact_head(arrays, k) if compact else 0
    if kind == HEAD_K:
        arrays = list(k[1])
    dtype = {0: np.float32, HEAD_F16: np.float16, HEAD_K: np.int8}[kind]
    head = [panels(a.astype(dtype)).transpose(0, 2, 1) for a in arrays]    # [P, nb, 16] each
    if lay in NIBBLES:   # u = q + the offset, or a table code's index
        u = _table_index(bits, q) if lay >= 10 else (q.astype(np.int16) + OFFSET.get(lay, 0)).astype(np.uint8)
        u = panels(u.reshape(N, nb, QB))                                # [P, 16, nb, 32]
        c = u & 15
        codes = (c[..., 0::2] | (c[..., 1::2] << 4)).transpose(0, 2, 3, 1).reshape(P, nb, -1)   # [P, nb, 16 pairs x 16]
        if lay in PLANES:
            codes = np.concatenate([codes, _planes(u >> 4, PLANES[lay])], axis=-1)
    else:
        codes = panels(q.astype(np.int8).reshape(N, nb, QB)).transpose(0, 2, 3, 1).view(np.uint8)
    parts = [np.ascontiguousarray(h).view(np.uint8) for h in head] + [codes.reshape(P, nb, -1)]
    blocks = np.concatenate(parts, axis=-1)                              # [P, nb, block bytes]
    if kind == HEAD_K:   # each panel's factors first: [P, K/256, arrays, 16] fp32
        factors = np.stack([panels(f.astype(np.float32)) for f in k[0]], axis=2).transpose(0, 3, 2, 1)
        blocks = np.concatenate([np.ascontiguousarray(factors).view(np.uint8).reshape(P, -1),
                                 blocks.reshape(P, -1)], axis=1)
    return np.ascontiguousarray(blocks).reshape(-1), bits | kind


def _planes(high: np.ndarray, planes: int) -> np.ndarray:
    """The codes' high bits [P, 16 columns, nb, 32 inputs] -> the plane bytes [P, nb, planes * 64]
    (``layout.h``'s plane_byte and plane_shift): 8 / planes groups of 4 inputs share 64 bytes, in
    the dot kernels' quad order (columns 0-3, 8-11, 4-7, 12-15, each its 4 inputs), group g at bit
    g % (8 / planes) * planes."""
    P, _, nb, _ = high.shape
    per = 8 // planes
    h = high.reshape(P, 2, 2, 4, nb, planes, per, 4).astype(np.uint8)    # c = 8 half + 4 quad + cc; g = s per + j
    shifts = (np.arange(per, dtype=np.uint8) * planes)[:, None]
    packed = np.bitwise_or.reduce(h << shifts, axis=6)                    # [P, half, quad, cc, nb, s, i]
    return np.ascontiguousarray(packed.transpose(0, 4, 5, 2, 1, 3, 6)).reshape(P, nb, planes * 64)   # [s][quad][half][cc][i]


def rebuild(bits: int, d: np.ndarray, m: np.ndarray | None, q: np.ndarray, m2: np.ndarray | None = None) -> np.ndarray:
    """The weights the kernels rebuild from (d, m, q): d*q, then + m for 4, 5, 7, 11 (fp32, in that order);
    2, 3, 6, 7 and 11: each half block's own d times q (2: plus its own m)."""
    N, K = q.shape
    lay = layout(bits)
    if lay == 2:
        return (np.repeat(d.reshape(N, -1), QB // 2, axis=1) * q.astype(np.float32)
                + np.repeat(m.reshape(N, -1), QB // 2, axis=1))
    if lay in SPLIT:
        scale = np.stack([d, m], axis=2).reshape(N, -1)                # a scale per 16 inputs
        w = np.repeat(scale, QB // 2, axis=1) * q.astype(np.float32)
        return w + np.repeat(m2, QB, axis=1) if lay in (7, 11) and m2 is not None else w
    w = np.repeat(d, QB, axis=1) * q.astype(np.float32)
    return w + np.repeat(m, QB, axis=1) if lay in (4, 5) else w
