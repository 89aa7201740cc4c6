"""Native kernels, compiled on first use with the system C compiler and cached by source hash.

``native_kernel(cache_dir, threads, progress)`` returns ``(kernel, why_not)``: a ``NativeKernel``
whose ``pack(w)`` turns an fp32 weight [N, K] into a ``PackedWeight`` once, at load, whose
``linear(x, packed, b)`` computes ``x @ w.T + b``, and whose ``attention``, ``rmsnorm``,
``rope_split`` and ``silu_mul`` run the rest of a decoder layer (``CompactTransformer``); or None
with the reason it is not available (not x86 with AVX2/FMA, no C compiler, a failed build or
self-check). Callers keep the reference layers' numpy
arithmetic then: hexa stays lossless either way, since plain and speculative decoding share whichever kernel
is in use.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from ...options import EngineOptions
from .binding import HEADER
from .compile import compile_c
from .arrays import contiguous, ptr, strides
from .fused import kv_f16

KERNELS = Path(__file__).parent
PANEL = HEADER.constants["HEXA_PANEL"]                    # output columns per packed panel
QUANT_BLOCK = HEADER.constants["HEXA_QUANT_BLOCK"]        # inputs per Q4_1 / Q8_0 block
QUANT_ROWS = HEADER.constants["HEXA_QUANT_ROWS"]          # quantized calls up to here rebuild weights per tile
MAX_HEAD_DIM = HEADER.constants["HEXA_MAX_HEAD_DIM"]
HEAD_DIMS = (64, 128, 256)                                 # what attention.c and rope.c take
FORWARD_ROWS = HEADER.constants["HEXA_FORWARD_ROWS"]      # most tokens one fused forward pass runs
TOPK_MAX = HEADER.constants["HEXA_TOPK_MAX"]              # most columns softmax_topk keeps per row
# fp32 panels (bits 0) and the same panels held as 2-byte values (an F16 / BF16 GGUF's matrices)
_PANEL_BITS = {np.float32: 0, np.float16: HEADER.constants["HEXA_PANELS_F16"],
               np.uint16: HEADER.constants["HEXA_PANELS_BF16"]}

# Each instruction set has its own folder of kernels (the same functions, declared once in
# hexa.h, giving the same bits: tests/native/driver.c compares them under qemu); the plain C
# files beside them (the forward pass, the pool, packing, RoPE) are shared by all.
ISA_FOLDER = {"avx2": "x86", "avx-vnni": "x86", "avx512-vnni": "x86", "amx": "x86", "neon": "arm64"}
# avx-vnni: the x86 kernels with the decoding dot products on vpdpbusd/vpdpwssd (the same integer
# sums, so the same bits as avx2; x86/quant_dot.c), for CPUs with AVX-VNNI; avx512-vnni: the same
# instructions EVEX-encoded, for CPUs with AVX-512 VNNI but no AVX-VNNI (AMD Zen 4), where the
# compiler also gets AVX-512's 32 vector registers; amx: the avx512-vnni build whose calls of more rows
# than one tile, from 24 rows on (prompt chunks, the largest trees), run on AMX int8 tiles (x86/amx.h: the same
# bits). Every AMX CPU has AVX-512 VNNI, and its 32 registers hold 8 rows' sums in one tile where the 16 of
# the avx-vnni build (this build's base before 2026-12-04) held 6: on the AMX Xeon an 8-row pass over
# Qwen2.5-1.5B's widths took 14.6 ms against 19.4, 2-6 rows 0.93-0.95x the time, 1 row the same
# (python -m engine.bench.kernels --isas amx,avx512-vnni --model FILE, 2026-12-04)
ISA_FLAGS = {"avx2": ["-mavx2", "-mfma", "-mf16c"], "avx-vnni": ["-mavx2", "-mfma", "-mf16c", "-mavxvnni", "-DHEXA_VNNI"],
             "amx": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512vnni",
                     "-DHEXA_VNNI", "-DHEXA_AMX"],
             "avx512-vnni": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512vnni",
                             "-DHEXA_VNNI"],
             "neon": ["-march=armv8-a"]}
AVX512_VNNI = ("avx512f", "avx512vl", "avx512bw", "avx512_vnni")   # /proc/cpuinfo's names
AMX = ("amx_tile", "amx_int8", "amx_bf16", "avx512_bf16", "avx512f", "avx512vl", "avx512bw", "avx512_vnni")   # amx.h, amx_bf16.h
FLAGS = ["-O3", "-pthread", "-ffp-contract=off", "-shared", "-fPIC"]


def sources(isa: str) -> list[Path]:
    shared = ["forward.c", "keys.c", "linear.c", "pack.c", "pool.c", "rope.c", "topk.c"]
    return [KERNELS / n for n in shared] + sorted((KERNELS / ISA_FOLDER[isa]).glob("*.c"))


def headers(isa: str) -> list[Path]:
    return sorted(KERNELS.glob("*.h")) + sorted((KERNELS / ISA_FOLDER[isa]).glob("*.h"))


def widen(values: np.ndarray) -> np.ndarray:
    """fp32 values of fp32, fp16 or bf16 (uint16) ones, exactly."""
    if values.dtype == np.uint16:
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32, copy=False)


def pack_half(w: np.ndarray) -> np.ndarray:
    """hexa_pack's panels of a weight [N, K] of fp16 (float16) or bf16 (uint16) values, in that
    type: panel[p][k][0..16) = w[16p .. 16p+16)[k], rows past N zero."""
    N, K = w.shape
    P = -(-N // PANEL)
    out = np.zeros((P * PANEL, K), w.dtype)
    out[:N] = w
    return np.ascontiguousarray(out.reshape(P, PANEL, K).transpose(0, 2, 1)).reshape(-1)


class PackedWeight:
    """A weight [N, K] in the kernel's layout; ``w[ids]`` gives original rows back (the embedding
    lookup and the calibration head read rows of the tied output projection).

    ``quant``/``bits``: the weight as codes in one of ``layout.h``'s layouts (bits 2-11, with
    HEXA_HEAD_F16 / HEXA_HEAD_K for compact heads) when it is exactly representable (a GGUF's
    quantized tensor, or fp32 weights that are exactly Q4_1 or Q8_0); the codes are then its only
    copy (``data`` is None: the kernels rebuild the fp32 weights from them bit for bit).
    Otherwise ``data`` holds the fp32 panels, bits is 0: float32, or an F16/BF16 GGUF's values
    as float16 / uint16 (bf16) in the same panels (``pack_half``; ``panel_bits``)."""
    __slots__ = ("data", "shape", "quant", "bits", "kernel")

    def __init__(self, data: np.ndarray | None, shape: tuple[int, int],
                 quant: tuple[np.ndarray, int] | None = None, kernel: "NativeKernel | None" = None):
        self.data = data
        self.shape = tuple(int(n) for n in shape)
        self.quant, self.bits = quant if quant is not None else (None, 0)
        self.kernel = kernel
        if data is None and self.quant is None:
            raise ValueError("a packed weight needs fp32 panels or codes")

    @property
    def nbytes(self) -> int:
        return (self.data.nbytes if self.data is not None else 0) + (self.quant.nbytes if self.quant is not None else 0)

    @property
    def panel_bits(self) -> int:
        """The bits hexa_forward takes for ``data``: 0 for fp32 panels, HEXA_PANELS_F16 / _BF16."""
        return _PANEL_BITS[self.data.dtype.type] if self.data is not None else 0

    def __getitem__(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if self.data is not None:
            rows = self.data.reshape(-1, self.shape[1], PANEL)[ids // PANEL, :, ids % PANEL]
            return widen(rows)
        flat = np.ascontiguousarray(ids.reshape(-1))
        out = self.kernel.unpack_rows(self.quant, self.bits, self.shape, flat)
        return out.reshape(*ids.shape, self.shape[1])


class NativeKernel:
    def __init__(self, lib: ctypes.CDLL, threads: int, build: str = "", library_path: str = "",
                 isa: str = "avx2"):
        self.build = build   # the sources' digest: a rebuilt kernel gets a fresh cost profile
        self.library_path = library_path
        self.isa = isa
        self.fn = HEADER.bind(lib)
        self.threads = threads
        self.amx = False     # hexa_linear_dot's many-row calls on AMX tiles (native_kernel turns them on)
        self.wide = False    # ... on 512-bit tiles (x86/wide.c; native_kernel turns them on where they pay)
        self.passed_over: list[tuple[str, str]] = []   # (build, why): better builds native_kernel could not use

    def pack(self, w: np.ndarray, keep_fp32: bool = False) -> PackedWeight:
        """Pack a weight [N, K]: as its codes alone when it is exactly Q4_1 or Q8_0 (5x / 3.5x
        fewer bytes, the same bits out of every product), else as fp32 panels. ``keep_fp32``
        keeps the fp32 panels beside the codes (tests compare the two kernels)."""
        w = np.ascontiguousarray(w, dtype=np.float32)
        N, K = w.shape
        quant = self.pack_quantized(w)
        data = None
        if quant is None or keep_fp32:
            data = np.empty(-(-N // PANEL) * PANEL * K, dtype=np.float32)
            self.fn["hexa_pack"](ptr(w), ptr(data), N, K, self.threads)
        return PackedWeight(data, (N, K), quant, self)

    def first_rows(self, w: PackedWeight, n: int) -> PackedWeight:
        """The first ``n`` rows of ``w`` (rounded up to whole panels) as a weight of their own,
        sharing ``w``'s memory: a panel's columns are contiguous, codes and fp32 alike."""
        N, K = w.shape
        n = min(N, -(-n // PANEL) * PANEL)
        data = None if w.data is None else w.data[:n * K]
        quant = None if w.quant is None else (w.quant[:self.fn["hexa_quant_bytes"](w.bits, n, K)], w.bits)
        return PackedWeight(data, (n, K), quant, self)

    def pack_quantized(self, w: np.ndarray) -> tuple[np.ndarray, int] | None:
        """(codes, bits) of a weight [N, K] that is exactly Q4_1 or Q8_0 (every block checked
        bit for bit by ``hexa_pack_quant``), in ``quant_gemm.c``'s layout; None otherwise."""
        N, K = w.shape
        if K % QUANT_BLOCK:
            return None
        for bits in (4, 8):
            out = np.empty(-(-N // PANEL) * (K // QUANT_BLOCK) * self.fn["hexa_quant_block_bytes"](bits),
                           dtype=np.uint8)
            if self.fn["hexa_pack_quant"](ptr(w), ptr(out), N, K, bits, self.threads):
                return out, bits
        return None

    def unpack_rows(self, codes: np.ndarray, bits: int, shape: tuple[int, int], rows: np.ndarray) -> np.ndarray:
        N, K = shape
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        out = np.empty((rows.size, K), dtype=np.float32)
        self.fn["hexa_unpack_rows"](ptr(codes), ptr(rows), rows.size, N, K, bits, ptr(out))
        return out

    def linear(self, x: np.ndarray, w: PackedWeight, b: np.ndarray | None = None,
               residual: np.ndarray | None = None, exact: bool = True, prompt: bool = False) -> np.ndarray:
        """``x @ w.T + b``; with ``residual`` (contiguous [M, N]), adds the product to it in place
        and returns it (the residual stream's update, without a separate add). The codes and the
        fp32 panels give identical bits, so which copy a call reads never changes a result.
        ``exact=False``: a weight with codes takes integer dot products on 8-bit activations
        (``quant_dot.c``, the decoding arithmetic) instead; with ``prompt`` as well, the prompt
        rows' arithmetic (``hexa_linear_prefill``: bf16 on AMX tiles, a K-quant's rows
        quantized per 256 inputs on the 512-bit tiles, else the same)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        M, K = x.shape
        N = w.shape[0]
        if K != w.shape[1]:
            raise ValueError(f"linear: input has {K} features, weight expects {w.shape[1]}")
        if residual is not None and (residual.shape != (M, N) or not residual.flags.c_contiguous
                                     or residual.dtype != np.float32):
            raise ValueError("linear: the residual must be a contiguous [rows, outputs] tensor")
        y = np.empty((M, N), dtype=np.float32) if residual is None else residual
        b = contiguous(b)
        if w.quant is not None and not exact:
            dot = self.fn["hexa_linear_prefill" if prompt else "hexa_linear_dot"]
            dot(ptr(x), ptr(w.quant), ptr(b), ptr(residual), ptr(y), M, N, K, w.bits, self.threads)
        elif w.quant is not None and (w.data is None or M <= QUANT_ROWS):
            self.fn["hexa_linear_quant"](ptr(x), ptr(w.quant), ptr(b), ptr(residual), ptr(y), M, N, K, w.bits,
                                         self.threads)
        elif w.panel_bits:
            self.fn["hexa_linear_half"](ptr(x), ptr(w.data), ptr(b), ptr(residual), ptr(y), M, N, K, w.panel_bits,
                                        self.threads)
        else:
            self.fn["hexa_linear"](ptr(x), ptr(w.data), ptr(b), ptr(residual), ptr(y), M, N, K, self.threads)
        return y

    def attention(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, length: int,
                  mask: np.ndarray | None, tokens: int = 0, scaled: bool = False, pass_keys: int = 0) -> np.ndarray:
        """Softmax attention of q [H, R, D] (D in HEAD_DIMS) over the first ``length`` rows of one
        layer's cache k/v [H, capacity, D]; ``mask`` is additive [R, length] or None. Returns [H, R, D];
        with ``tokens`` = S (the R rows being R/S query heads of S tokens), token-major [S, R/S*H*D].
        ``scaled``: q already carries the 1/sqrt(D) factor. ``pass_keys``: the last keys are the
        pass's own tokens (a tree): chunked by each row's logical positions (``keys.h``)."""
        H, R, D = q.shape
        ks = strides(k)
        if D not in HEAD_DIMS or ks[2] != 1 or ks[1] != D or k.strides != v.strides:
            raise ValueError(f"attention: needs heads of {HEAD_DIMS} dims and a row-major cache")
        if tokens and R % tokens:
            raise ValueError("attention: rows are not a whole number of query heads")
        q = np.ascontiguousarray(q if scaled else q * np.float32(D ** -0.5), dtype=np.float32)
        out = np.empty((tokens, H * R // tokens * D) if tokens else (H, R, D), dtype=np.float32)
        mask = contiguous(mask)
        self.fn["hexa_attention"](ptr(q), ptr(k), ptr(v), ptr(mask), ptr(out), H, R, length, D, ks[0], tokens,
                                  pass_keys, kv_f16(k, v), self.threads)
        return out

    def softmax_topk(self, scores: np.ndarray, extra: np.ndarray | None, k: int
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Softmax over each row of [scores | extra] ([S, n] and [S, m] or None): its ``k`` largest
        probabilities, largest first, and their columns (extra's after scores'), as [S, k] float32
        and int64 (``topk.c``: calibration's ranking, without the [S, n + m] probabilities)."""
        scores = np.ascontiguousarray(scores, dtype=np.float32)
        S, n = scores.shape
        m = 0 if extra is None else extra.shape[1]
        if extra is not None:
            extra = np.ascontiguousarray(extra, dtype=np.float32)
            if extra.shape[0] != S:
                raise ValueError(f"softmax_topk: {S} rows of scores, {extra.shape[0]} of extra")
        if not 1 <= k <= min(n + m, TOPK_MAX):
            raise ValueError(f"softmax_topk: k={k} outside 1..{min(n + m, TOPK_MAX)}")
        probs = np.empty((S, k), dtype=np.float32)
        ids = np.empty((S, k), dtype=np.int32)
        self.fn["hexa_softmax_topk"](ptr(scores), n, None if extra is None else ptr(extra), m, S, k,
                                     ptr(probs), ptr(ids), self.threads)
        return probs, ids.astype(np.int64)

    def rmsnorm(self, x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.empty_like(x)
        self.fn["hexa_rmsnorm"](ptr(x), ptr(contiguous(w)), ptr(out), x.shape[0], x.shape[1], eps, self.threads)
        return out

    def silu_mul(self, gu: np.ndarray) -> np.ndarray:
        """silu(g) * u for rows [g | u]."""
        M, F2 = gu.shape
        out = np.empty((M, F2 // 2), dtype=np.float32)
        self.fn["hexa_silu_mul"](ptr(contiguous(gu)), ptr(out), M, F2 // 2, self.threads)
        return out

    def gelu_mul(self, gu: np.ndarray) -> np.ndarray:
        """gelu_tanh(g) * u for rows [g | u]."""
        M, F2 = gu.shape
        out = np.empty((M, F2 // 2), dtype=np.float32)
        self.fn["hexa_gelu_mul"](ptr(contiguous(gu)), ptr(out), M, F2 // 2, self.threads)
        return out

    def rope_split(self, qkv: np.ndarray, cos: np.ndarray, sin: np.ndarray, heads: int,
                   k_cache: np.ndarray, v_cache: np.ndarray, start: int, q_scale: float,
                   q_norm: np.ndarray | None = None, k_norm: np.ndarray | None = None,
                   eps: float = 1e-6) -> np.ndarray:
        """Rotate q and k of ``qkv`` [S, (heads + 2*kv_heads)*D] (cos/sin [S, D]), after a per-head
        RMSNorm by ``q_norm``/``k_norm`` where given; write k and v to one layer's cache
        [kv_heads, capacity, D] at rows start..start+S-1; return q [heads, S, D] times ``q_scale``."""
        S = qkv.shape[0]
        kv_heads, D = k_cache.shape[0], k_cache.shape[2]
        ks = strides(k_cache)
        if D not in HEAD_DIMS or qkv.shape[1] != (heads + 2 * kv_heads) * D or k_cache.strides != v_cache.strides \
                or ks[1] != D or ks[2] != 1 or start + S > k_cache.shape[1]:
            raise ValueError("rope_split: shapes do not match the cache")
        q = np.empty((heads, S, D), dtype=np.float32)
        self.fn["hexa_rope_split"](ptr(contiguous(qkv)), ptr(contiguous(cos)), ptr(contiguous(sin)), ptr(q),
                                   ptr(k_cache), ptr(v_cache), S, heads, kv_heads, D, ks[0], start, q_scale,
                                   ptr(contiguous(q_norm)), ptr(contiguous(k_norm)), eps, kv_f16(k_cache, v_cache),
                                   self.threads)
        return q


def cpu_features() -> set[str]:
    """The CPU's feature flags as Linux names them in /proc/cpuinfo ("flags" on x86, "Features" on
    ARM64); empty where they cannot be read."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return set()
    line = next((l for l in lines if l.startswith(("flags", "Features"))), "")
    return set(line.partition(":")[2].split())


def cpu_identity() -> tuple[str, int]:
    """(vendor, family) as /proc/cpuinfo gives them on x86 ("AuthenticAMD", 26); ("", 0) where
    they cannot be read."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "", 0
    field = {k.strip(): v.strip() for k, _, v in (l.partition(":") for l in lines[:40])}
    try:
        return field.get("vendor_id", ""), int(field.get("cpu family", "0"))
    except ValueError:
        return field.get("vendor_id", ""), 0


def wide_tiles(isa: str, identity: tuple[str, int] | None = None) -> bool:
    """Whether the VNNI builds' products of 6 rows or more take 512-bit tiles (x86/wide.c): on AMD
    CPUs with AVX-512 VNNI, Zen 4 (family 25; Zen 3, also 25, has no AVX-512) and Zen 5 (26) on.
    Zen 5 runs a 512-bit vpdpbusd whole (its avx-vnni build: 1-2 row steps ran 1.01-1.16x slower
    in the avx512-vnni one). Zen 4 splits it into two 256-bit halves, yet the tiles' fewer float
    steps and loads a row paid there too: whole passes of 6-256 rows ran 1.00-1.24x as fast as on
    the 256-bit tiles on four model files, one 16-row sample of 0.96x aside (2026-12-03; before
    the tiles' rework of 2026-12-01 they took 0.46-1.25x the 256-bit tiles' time). On an Intel
    Xeon with AMX they did not pay: whole passes of 6-24 rows on the avx512-vnni build's 512-bit
    tiles took 0.92-1.08x the 256-bit tiles' time (SmolLM2-135M Q4_1, Qwen2.5-1.5B's widths,
    2026-12-04, builds in turn in one process), so Intel keeps the 256-bit tiles (and the amx
    build's AMX tiles take its calls of 24 rows or more)."""
    vendor, family = identity or cpu_identity()
    return (isa in ("avx-vnni", "avx512-vnni") and vendor == "AuthenticAMD" and family >= 25
            and all(f in cpu_features() for f in AVX512_VNNI))


def host_isa(prefer: str = "auto") -> tuple[str | None, str | None]:
    """(the kernels' instruction set for this CPU, None) or (None, why there is none). ``prefer``:
    the engine option ``isa``: "auto" takes the best the CPU has, a name takes that build ("avx2"
    keeps the AVX2 kernels on a CPU with VNNI; benchmarks compare the builds on one CPU)."""
    isas, why = host_isas(prefer)
    return (isas[0], None) if isas else (None, why)


def host_isas(prefer: str = "auto") -> tuple[list[str], str | None]:
    """The builds ``host_isa`` may take, best first: with "auto" every one the CPU runs (a build
    the C compiler cannot make gives way to the next), with a name that one; or ([], why none)."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        flags = cpu_features()
        if not flags:
            return [], "cannot read the CPU's features (/proc/cpuinfo)"
        missing = [f for f in ("avx2", "fma", "f16c") if f not in flags]
        if missing:
            return [], f"CPU lacks {', '.join(missing)}"
        has = {"avx2": True, "avx-vnni": "avx_vnni" in flags, "avx512-vnni": all(f in flags for f in AVX512_VNNI),
               "amx": all(f in flags for f in AMX)}
        if prefer == "auto":
            return [isa for isa in ("amx", "avx-vnni", "avx512-vnni", "avx2") if has[isa]], None
        if prefer not in has:
            return [], f"isa {prefer} is not for an x86-64 CPU"
        return ([prefer], None) if has[prefer] else ([], f"this CPU has no {prefer.upper().replace('-', ' ')}")
    if machine in ("aarch64", "arm64", "armv8l"):
        if platform.system() == "Windows":
            # pool.c's workers sleep on Linux futexes; a Windows pool is not written yet
            return [], "no native kernels for Windows on ARM yet (the reference layers' numpy arithmetic is used)"
        if machine == "armv8l":
            return [], "a 32-bit ARM Python on a 64-bit CPU: the NEON kernels need a 64-bit (aarch64) Python"
        if prefer not in ("auto", "neon"):
            return [], f"isa {prefer} is not for an ARM64 CPU"
        return ["neon"], None   # Advanced SIMD is part of every ARMv8-A (AArch64) CPU
    return [], f"no native kernels for {platform.machine()}"


def _build(out: Path, isa: str, cc: str | None = None) -> tuple[str, bool] | None:
    """Compile one build into ``out``; None, or (why not, whether it lasts: the compiler ran and
    refused the sources, as it will again, where a missing compiler or a timeout may pass)."""
    cc = _compiler(cc)
    if not cc:
        return "no C compiler (cc/gcc/clang) on PATH", False
    return compile_c(cc, [*FLAGS, *ISA_FLAGS[isa], "-I", str(KERNELS)], sources(isa), out)


def _self_check(kernel: NativeKernel) -> str | None:
    from .. import reference as ref

    g = np.random.default_rng(0)

    def randn(*shape):
        return g.standard_normal(shape, dtype=np.float32)
    x, w, b = randn(7, 83), randn(21, 83), randn(21)
    packed = kernel.pack(w)
    y = kernel.linear(x, packed, b)
    if not np.allclose(y, ref.linear(x, w, b), atol=1e-4):
        return "the kernel's self-check gave wrong results"
    if not all(np.array_equal(kernel.linear(x[i:i + 1], packed, b)[0], y[i]) for i in range(len(x))):
        return "the kernel's self-check found results that depend on the batch size"
    if not np.array_equal(packed[[0, 17, 20]], w[[0, 17, 20]]):
        return "the kernel's self-check could not read packed rows back"
    codes = g.integers(0, 16, (21, 64)).astype(np.float32)
    codes[:, ::32], codes[:, 1::32] = 0, 15            # each block's extremes, as Q4_1 has them
    d, m = (t.astype(np.float16).astype(np.float32).repeat(32, axis=1)
            for t in (g.random((21, 2), dtype=np.float32), randn(21, 2)))
    both = kernel.pack(codes * d + m, keep_fp32=True)
    fp32, quant = PackedWeight(both.data, (21, 64)), PackedWeight(None, (21, 64), (both.quant, both.bits), kernel)
    for rows in (3, QUANT_ROWS + 8):   # codes rebuilt per tile, and per call into fp32 panels
        xq = randn(rows, 64)
        if both.bits != 4 or not np.array_equal(kernel.linear(xq, quant), kernel.linear(xq, fp32)):
            return "the quantized kernel's self-check gave results that differ from the fp32 kernel"
    if not np.array_equal(quant[[0, 20]], fp32[[0, 20]]):
        return "the quantized kernel's self-check could not read rows back from codes"
    q, kc, vc = randn(2, 6, 64), randn(2, 300, 64), randn(2, 300, 64)
    mask = np.zeros((6, 290), dtype=np.float32)
    mask[:, [5, 289]] = -np.inf
    if not np.allclose(kernel.attention(q, kc, vc, 290, mask), ref.attention(q, kc[:, :290], vc[:, :290], mask),
                       atol=1e-5):
        return "the attention kernel's self-check gave wrong results"
    x, gu = randn(3, 70), randn(3, 40)
    if not (np.allclose(kernel.rmsnorm(x, np.ones(70, np.float32), 1e-5), ref.rmsnorm(x, 1, 1e-5), atol=1e-5)
            and np.allclose(kernel.silu_mul(gu), ref.silu(gu[:, :20]) * gu[:, 20:], atol=1e-5)):
        return "the layer-glue kernels' self-check gave wrong results"
    return None


COMPILING = "compiling the native kernels (first start only, about a minute)"


def native_kernel(cache_dir: Path, threads: int, progress: Callable[[str], None] | None = None,
                  options: EngineOptions | None = None) -> tuple[NativeKernel | None, str | None]:
    """The kernels built for this CPU (compiled into ``cache_dir/kernels`` on first use, saying so
    through ``progress``), or None and the reason they cannot be used. ``options``: the engine's
    ``isa`` and the pool's ``spin_us``, handed to the library before its workers start."""
    options = options or EngineOptions()
    isas, why = host_isas(options.isa)
    said = []

    def say_once(text: str) -> None:   # one "compiling" line, whichever builds it takes
        if progress and text not in said:
            said.append(text)
            progress(text)
    failed: list[tuple[str, str]] = []   # (build, why): the better builds that could not be used
    for isa in isas:
        kernel, why = _kernel_for(isa, cache_dir, threads, say_once, options)
        if kernel is not None:
            kernel.passed_over = failed
            return kernel, None
        failed.append((isa, why))
    return None, failed[0][1] if failed else why   # the best build's reason: a compiler's error


def _compiler(cc: str | None) -> str | None:
    return cc or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _compiler_identity(cc: str | None) -> str:
    """Which compiler a failed build was tried with: another one (or an upgrade) tries again."""
    path = shutil.which(cc) if cc else None
    try:
        st = os.stat(path) if path else None
    except OSError:
        st = None
    return f"{path} {st.st_size} {st.st_mtime_ns}" if st else f"{cc}"


def _kernel_for(isa: str, cache_dir: Path, threads: int, progress: Callable[[str], None] | None,
                options: EngineOptions) -> tuple[NativeKernel | None, str | None]:
    """One build's kernels, compiled on first use and self-checked, or None and why not. A build
    this compiler failed is remembered (``.failed`` beside it), so that a start on a compiler that
    cannot make the best build does not retry it every time before taking the next one."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources(isa) + headers(isa))
                            + " ".join(FLAGS + ISA_FLAGS[isa]).encode()).hexdigest()[:16]
    path = Path(cache_dir) / "kernels" / f"native-{digest}.so"
    if not path.exists():
        cc = _compiler(options.cc)
        failed = path.with_suffix(".failed")
        identity = _compiler_identity(cc)
        try:
            seen, _, why = failed.read_text().partition("\n")
            if seen == identity:
                return None, why
        except OSError:
            pass
        if progress:
            progress(COMPILING)
        failure = _build(path, isa, cc)
        if failure:
            why, lasting = failure
            if lasting:
                try:
                    failed.write_text(f"{identity}\n{why}")
                except OSError:
                    pass
            return None, why
    try:
        kernel = NativeKernel(ctypes.CDLL(str(path)), threads, digest, str(path), isa)
        kernel.fn["hexa_pool_spin"](options.spin_us)
        # the tiles need the OS's leave (Linux: arch_prctl); refused, the VNNI tiles give the same bits
        kernel.amx = bool(kernel.fn["hexa_amx"](1)) if isa == "amx" else False
        kernel.wide = bool(kernel.fn["hexa_wide"](int(wide_tiles(isa))))
    except OSError as exc:
        return None, f"cannot load {path.name}: {exc}"
    why = _self_check(kernel)
    return (None, why) if why else (kernel, None)
