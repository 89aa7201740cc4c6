"""Native kernels, compiled on first use with the system C compiler and cached by source hash.

``native_kernel(cache_dir, threads, progress)`` returns ``(kernel, why_not)``: a ``NativeKernel``
whose ``pack(w)`` turns an fp32 weight [N, K] into a ``PackedWeight`` once, at load, whose
``linear(x, packed, b)`` computes ``x @ w.T + b``, and whose ``attention``, ``rmsnorm``,
``rope_split`` and ``silu_mul`` run the rest of a decoder layer (``CompactTransformer``); or None
with the reason it is not available (not x86 with AVX2/FMA, no C compiler, a failed build or
self-check). Callers keep torch's own linear
then: hexa stays lossless either way, since plain and speculative decoding share whichever kernel
is in use.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

import torch

from ...options import EngineOptions
from .binding import HEADER
from .fused import kv_f16

KERNELS = Path(__file__).parent
PANEL = HEADER.constants["HEXA_PANEL"]                    # output columns per packed panel
QUANT_BLOCK = HEADER.constants["HEXA_QUANT_BLOCK"]        # inputs per Q4_1 / Q8_0 block
QUANT_ROWS = HEADER.constants["HEXA_QUANT_ROWS"]          # quantized calls up to here rebuild weights per tile
MAX_HEAD_DIM = HEADER.constants["HEXA_MAX_HEAD_DIM"]
HEAD_DIMS = (64, 128, 256)                                 # what attention.c and rope.c take
FORWARD_ROWS = HEADER.constants["HEXA_FORWARD_ROWS"]      # most tokens one fused forward pass runs

# Each instruction set has its own folder of kernels (the same functions, declared once in
# hexa.h, giving the same bits: tests/native/driver.c compares them under qemu); the plain C
# files beside them (the forward pass, the pool, packing, RoPE) are shared by all.
ISA_FOLDER = {"avx2": "x86", "avx-vnni": "x86", "avx512-vnni": "x86", "neon": "arm64"}
# avx-vnni: the x86 kernels with the decoding dot products on vpdpbusd/vpdpwssd (the same integer
# sums, so the same bits as avx2; x86/quant_dot.c), for CPUs with AVX-VNNI; avx512-vnni: the same
# instructions EVEX-encoded, for CPUs with AVX-512 VNNI but no AVX-VNNI (AMD Zen 4), where the
# compiler also gets AVX-512's 32 vector registers
ISA_FLAGS = {"avx2": ["-mavx2", "-mfma", "-mf16c"], "avx-vnni": ["-mavx2", "-mfma", "-mf16c", "-mavxvnni", "-DHEXA_VNNI"],
             "avx512-vnni": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512vnni",
                             "-DHEXA_VNNI"],
             "neon": ["-march=armv8-a"]}
AVX512_VNNI = ("avx512f", "avx512vl", "avx512bw", "avx512_vnni")   # /proc/cpuinfo's names
FLAGS = ["-O3", "-pthread", "-ffp-contract=off", "-shared", "-fPIC"]


def sources(isa: str) -> list[Path]:
    shared = ["forward.c", "keys.c", "linear.c", "pack.c", "pool.c", "rope.c"]
    return [KERNELS / n for n in shared] + sorted((KERNELS / ISA_FOLDER[isa]).glob("*.c"))


def headers(isa: str) -> list[Path]:
    return sorted(KERNELS.glob("*.h")) + sorted((KERNELS / ISA_FOLDER[isa]).glob("*.h"))


class PackedWeight:
    """A weight [N, K] in the kernel's layout; ``w[ids]`` gives original rows back (the embedding
    lookup and the calibration head read rows of the tied output projection).

    ``quant``/``bits``: the weight as codes in one of ``layout.h``'s layouts (bits 4-9, with
    HEXA_HEAD_F16 / HEXA_HEAD_K for compact heads) when it is exactly representable (a GGUF's
    quantized tensor, or fp32 weights that are exactly Q4_1 or Q8_0); the codes are then its only
    copy (``data`` is None: the kernels rebuild the fp32 weights from them bit for bit).
    Otherwise ``data`` holds the fp32 panels, bits is 0."""
    __slots__ = ("data", "shape", "quant", "bits", "kernel")

    def __init__(self, data: torch.Tensor | None, shape: tuple[int, int],
                 quant: tuple[torch.Tensor, int] | None = None, kernel: "NativeKernel | None" = None):
        self.data = data
        self.shape = torch.Size(shape)
        self.quant, self.bits = quant if quant is not None else (None, 0)
        self.kernel = kernel
        if data is None and self.quant is None:
            raise ValueError("a packed weight needs fp32 panels or codes")

    @property
    def nbytes(self) -> int:
        return (self.data.nbytes if self.data is not None else 0) + (self.quant.nbytes if self.quant is not None else 0)

    def __getitem__(self, ids) -> torch.Tensor:
        ids = torch.as_tensor(ids, dtype=torch.long)
        if self.data is not None:
            return self.data.view(-1, self.shape[1], PANEL)[ids // PANEL, :, ids % PANEL]
        flat = ids.reshape(-1).contiguous()
        out = self.kernel.unpack_rows(self.quant, self.bits, self.shape, flat)
        return out.view(*ids.shape, self.shape[1])


def _ptr(t: torch.Tensor | None):
    return None if t is None else t.data_ptr()


class NativeKernel:
    def __init__(self, lib: ctypes.CDLL, threads: int, build: str = "", library_path: str = "",
                 isa: str = "avx2"):
        self.build = build   # the sources' digest: a rebuilt kernel gets a fresh cost profile
        self.library_path = library_path
        self.isa = isa
        self.fn = HEADER.bind(lib)
        self.threads = threads

    def pack(self, w: torch.Tensor, keep_fp32: bool = False) -> PackedWeight:
        """Pack a weight [N, K]: as its codes alone when it is exactly Q4_1 or Q8_0 (5x / 3.5x
        fewer bytes, the same bits out of every product), else as fp32 panels. ``keep_fp32``
        keeps the fp32 panels beside the codes (tests compare the two kernels)."""
        w = w.to(torch.float32).contiguous()
        N, K = w.shape
        quant = self.pack_quantized(w)
        data = None
        if quant is None or keep_fp32:
            data = torch.empty(-(-N // PANEL) * PANEL * K, dtype=torch.float32)
            self.fn["hexa_pack"](w.data_ptr(), data.data_ptr(), N, K, self.threads)
        return PackedWeight(data, (N, K), quant, self)

    def first_rows(self, w: PackedWeight, n: int) -> PackedWeight:
        """The first ``n`` rows of ``w`` (rounded up to whole panels) as a weight of their own,
        sharing ``w``'s memory: a panel's columns are contiguous, codes and fp32 alike."""
        N, K = w.shape
        n = min(N, -(-n // PANEL) * PANEL)
        data = None if w.data is None else w.data[:n * K]
        quant = None if w.quant is None else (w.quant[:self.fn["hexa_quant_bytes"](w.bits, n, K)], w.bits)
        return PackedWeight(data, (n, K), quant, self)

    def pack_quantized(self, w: torch.Tensor) -> tuple[torch.Tensor, int] | None:
        """(codes, bits) of a weight [N, K] that is exactly Q4_1 or Q8_0 (every block checked
        bit for bit by ``hexa_pack_quant``), in ``quant_gemm.c``'s layout; None otherwise."""
        N, K = w.shape
        if K % QUANT_BLOCK:
            return None
        for bits in (4, 8):
            out = torch.empty(-(-N // PANEL) * (K // QUANT_BLOCK) * self.fn["hexa_quant_block_bytes"](bits),
                              dtype=torch.uint8)
            if self.fn["hexa_pack_quant"](w.data_ptr(), out.data_ptr(), N, K, bits, self.threads):
                return out, bits
        return None

    def unpack_rows(self, codes: torch.Tensor, bits: int, shape: tuple[int, int], rows: torch.Tensor) -> torch.Tensor:
        N, K = shape
        rows = rows.to(torch.int64).contiguous()
        out = torch.empty(rows.numel(), K, dtype=torch.float32)
        self.fn["hexa_unpack_rows"](codes.data_ptr(), rows.data_ptr(), rows.numel(), N, K, bits, out.data_ptr())
        return out

    def linear(self, x: torch.Tensor, w: PackedWeight, b: torch.Tensor | None = None,
               residual: torch.Tensor | None = None, exact: bool = True) -> torch.Tensor:
        """``x @ w.T + b``; with ``residual`` (contiguous [M, N]), adds the product to it in place
        and returns it (the residual stream's update, without a separate add). The codes and the
        fp32 panels give identical bits, so which copy a call reads never changes a result.
        ``exact=False``: a weight with codes takes integer dot products on 8-bit activations
        (``quant_dot.c``, the decoding arithmetic) instead."""
        x = x.contiguous()
        M, K = x.shape
        N = w.shape[0]
        if K != w.shape[1]:
            raise ValueError(f"linear: input has {K} features, weight expects {w.shape[1]}")
        if residual is not None and (residual.shape != (M, N) or not residual.is_contiguous()):
            raise ValueError("linear: the residual must be a contiguous [rows, outputs] tensor")
        y = torch.empty(M, N, dtype=torch.float32) if residual is None else residual
        if b is not None:
            b = b.contiguous()
        if w.quant is not None and not exact:
            self.fn["hexa_linear_dot"](x.data_ptr(), w.quant.data_ptr(), _ptr(b), _ptr(residual), y.data_ptr(),
                                       M, N, K, w.bits, self.threads)
        elif w.quant is not None and (w.data is None or M <= QUANT_ROWS):
            self.fn["hexa_linear_quant"](x.data_ptr(), w.quant.data_ptr(), _ptr(b), _ptr(residual), y.data_ptr(),
                                         M, N, K, w.bits, self.threads)
        else:
            self.fn["hexa_linear"](x.data_ptr(), w.data.data_ptr(), _ptr(b), _ptr(residual), y.data_ptr(), M, N, K,
                                   self.threads)
        return y

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, length: int,
                  mask: torch.Tensor | None, tokens: int = 0, scaled: bool = False, pass_keys: int = 0) -> torch.Tensor:
        """Softmax attention of q [H, R, D] (D in HEAD_DIMS) over the first ``length`` rows of one
        layer's cache k/v [H, capacity, D]; ``mask`` is additive [R, length] or None. Returns [H, R, D];
        with ``tokens`` = S (the R rows being R/S query heads of S tokens), token-major [S, R/S*H*D].
        ``scaled``: q already carries the 1/sqrt(D) factor. ``pass_keys``: the last keys are the
        pass's own tokens (a tree): chunked by each row's logical positions (``keys.h``)."""
        H, R, D = q.shape
        if D not in HEAD_DIMS or k.stride(2) != 1 or k.stride(1) != D or k.stride() != v.stride():
            raise ValueError(f"attention: needs heads of {HEAD_DIMS} dims and a row-major cache")
        if tokens and R % tokens:
            raise ValueError("attention: rows are not a whole number of query heads")
        q = (q if scaled else q * D ** -0.5).contiguous()
        out = torch.empty((tokens, H * R // tokens * D) if tokens else (H, R, D), dtype=torch.float32)
        if mask is not None:
            mask = mask.contiguous()
        self.fn["hexa_attention"](q.data_ptr(), k.data_ptr(), v.data_ptr(), _ptr(mask), out.data_ptr(), H, R, length,
                                  D, k.stride(0), tokens, pass_keys, kv_f16(k, v), self.threads)
        return out

    def rmsnorm(self, x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        self.fn["hexa_rmsnorm"](x.data_ptr(), w.data_ptr(), out.data_ptr(), x.shape[0], x.shape[1], eps, self.threads)
        return out

    def silu_mul(self, gu: torch.Tensor) -> torch.Tensor:
        """silu(g) * u for rows [g | u]."""
        M, F2 = gu.shape
        out = torch.empty(M, F2 // 2, dtype=torch.float32)
        self.fn["hexa_silu_mul"](gu.contiguous().data_ptr(), out.data_ptr(), M, F2 // 2, self.threads)
        return out

    def gelu_mul(self, gu: torch.Tensor) -> torch.Tensor:
        """gelu_tanh(g) * u for rows [g | u]."""
        M, F2 = gu.shape
        out = torch.empty(M, F2 // 2, dtype=torch.float32)
        self.fn["hexa_gelu_mul"](gu.contiguous().data_ptr(), out.data_ptr(), M, F2 // 2, self.threads)
        return out

    def rope_split(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, heads: int,
                   k_cache: torch.Tensor, v_cache: torch.Tensor, start: int, q_scale: float,
                   q_norm: torch.Tensor | None = None, k_norm: torch.Tensor | None = None,
                   eps: float = 1e-6) -> torch.Tensor:
        """Rotate q and k of ``qkv`` [S, (heads + 2*kv_heads)*D] (cos/sin [S, D]), after a per-head
        RMSNorm by ``q_norm``/``k_norm`` where given; write k and v to one layer's cache
        [kv_heads, capacity, D] at rows start..start+S-1; return q [heads, S, D] times ``q_scale``."""
        S = qkv.shape[0]
        kv_heads, D = k_cache.shape[0], k_cache.shape[2]
        if D not in HEAD_DIMS or qkv.shape[1] != (heads + 2 * kv_heads) * D or k_cache.stride() != v_cache.stride() \
                or k_cache.stride(1) != D or start + S > k_cache.shape[1]:
            raise ValueError("rope_split: shapes do not match the cache")
        q = torch.empty(heads, S, D, dtype=torch.float32)
        cos, sin = cos.contiguous(), sin.contiguous()
        self.fn["hexa_rope_split"](qkv.contiguous().data_ptr(), cos.data_ptr(), sin.data_ptr(), q.data_ptr(),
                                   k_cache.data_ptr(), v_cache.data_ptr(), S, heads, kv_heads, D, k_cache.stride(0),
                                   start, q_scale, _ptr(q_norm), _ptr(k_norm), eps, kv_f16(k_cache, v_cache),
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


def host_isa(prefer: str = "auto") -> tuple[str | None, str | None]:
    """(the kernels' instruction set for this CPU, None) or (None, why there is none). ``prefer``:
    the engine option ``isa``: "auto" takes the best the CPU has, a name takes that build ("avx2"
    keeps the AVX2 kernels on a CPU with VNNI; benchmarks compare the builds on one CPU)."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        flags = cpu_features()
        if not flags:
            return None, "cannot read the CPU's features (/proc/cpuinfo)"
        missing = [f for f in ("avx2", "fma", "f16c") if f not in flags]
        if missing:
            return None, f"CPU lacks {', '.join(missing)}"
        has = {"avx2": True, "avx-vnni": "avx_vnni" in flags, "avx512-vnni": all(f in flags for f in AVX512_VNNI)}
        if prefer == "auto":
            return next(isa for isa in ("avx-vnni", "avx512-vnni", "avx2") if has[isa]), None
        if prefer not in has:
            return None, f"isa {prefer} is not for an x86-64 CPU"
        return (prefer, None) if has[prefer] else (None, f"this CPU has no {prefer.upper().replace('-', ' ')}")
    if machine in ("aarch64", "arm64", "armv8l"):
        if platform.system() == "Windows":
            # pool.c's workers sleep on Linux futexes; a Windows pool is not written yet
            return None, "no native kernels for Windows on ARM yet (torch's kernels are used)"
        if machine == "armv8l":
            return None, "a 32-bit ARM Python on a 64-bit CPU: the NEON kernels need a 64-bit (aarch64) Python"
        if prefer not in ("auto", "neon"):
            return None, f"isa {prefer} is not for an ARM64 CPU"
        return "neon", None   # Advanced SIMD is part of every ARMv8-A (AArch64) CPU
    return None, f"no native kernels for {platform.machine()}"


def _build(out: Path, isa: str, cc: str | None = None) -> str | None:
    cc = cc or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return "no C compiler (cc/gcc/clang) on PATH"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:   # rename: never a half-written .so
        tmp_so = Path(tmp) / out.name
        try:
            run = subprocess.run([cc, *FLAGS, *ISA_FLAGS[isa], "-I", str(KERNELS), *map(str, sources(isa)),
                                  "-o", str(tmp_so), "-lm"],
                                 capture_output=True, text=True, check=False, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"compiling the kernel failed: cannot run {cc}: {exc.__class__.__name__}"
        if run.returncode != 0:
            first = (run.stderr.strip().splitlines() or ["unknown error"])[0]
            return f"compiling the kernel failed: {first}"
        os.replace(tmp_so, out)
    return None


def _self_check(kernel: NativeKernel) -> str | None:
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(s, generator=g) for s in ((7, 83), (21, 83), (21,)))
    packed = kernel.pack(w)
    y = kernel.linear(x, packed, b)
    if not torch.allclose(y, torch.nn.functional.linear(x, w, b), atol=1e-4):
        return "the kernel's self-check gave wrong results"
    if not all(torch.equal(kernel.linear(x[i:i + 1], packed, b)[0], y[i]) for i in range(len(x))):
        return "the kernel's self-check found results that depend on the batch size"
    if not torch.equal(packed[torch.tensor([0, 17, 20])], w[[0, 17, 20]]):
        return "the kernel's self-check could not read packed rows back"
    codes = torch.randint(0, 16, (21, 64), generator=g).float()
    codes[:, ::32], codes[:, 1::32] = 0, 15            # each block's extremes, as Q4_1 has them
    d, m = (t.half().float().repeat_interleave(32, 1) for t in (torch.rand(21, 2, generator=g), torch.randn(21, 2, generator=g)))
    both = kernel.pack(codes * d + m, keep_fp32=True)
    fp32, quant = PackedWeight(both.data, (21, 64)), PackedWeight(None, (21, 64), (both.quant, both.bits), kernel)
    for rows in (3, QUANT_ROWS + 8):   # codes rebuilt per tile, and per call into fp32 panels
        xq = torch.randn(rows, 64, generator=g)
        if both.bits != 4 or not torch.equal(kernel.linear(xq, quant), kernel.linear(xq, fp32)):
            return "the quantized kernel's self-check gave results that differ from the fp32 kernel"
    if not torch.equal(quant[torch.tensor([0, 20])], fp32[torch.tensor([0, 20])]):
        return "the quantized kernel's self-check could not read rows back from codes"
    q, kc, vc = (torch.randn(s, generator=g) for s in ((2, 6, 64), (2, 300, 64), (2, 300, 64)))
    mask = torch.zeros(6, 290).index_fill_(1, torch.tensor([5, 289]), float("-inf"))
    ref = torch.nn.functional.scaled_dot_product_attention(q[None], kc[None, :, :290], vc[None, :, :290],
                                                           attn_mask=mask[None, None])[0]
    if not torch.allclose(kernel.attention(q, kc, vc, 290, mask), ref, atol=1e-5):
        return "the attention kernel's self-check gave wrong results"
    x, gu = torch.randn(3, 70, generator=g), torch.randn(3, 40, generator=g)
    norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
    act = torch.nn.functional.silu(gu[:, :20]) * gu[:, 20:]
    if not (torch.allclose(kernel.rmsnorm(x, torch.ones(70), 1e-5), norm, atol=1e-5)
            and torch.allclose(kernel.silu_mul(gu), act, atol=1e-5)):
        return "the layer-glue kernels' self-check gave wrong results"
    return None


COMPILING = "compiling the native kernels (first start only, about a minute)"


def native_kernel(cache_dir: Path, threads: int, progress: Callable[[str], None] | None = None,
                  options: EngineOptions | None = None) -> tuple[NativeKernel | None, str | None]:
    """The kernels built for this CPU (compiled into ``cache_dir/kernels`` on first use, saying so
    through ``progress``), or None and the reason they cannot be used. ``options``: the engine's
    ``isa`` and the pool's ``spin_us``, handed to the library before its workers start."""
    options = options or EngineOptions()
    isa, why = host_isa(options.isa)
    if why:
        return None, why
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources(isa) + headers(isa))
                            + " ".join(FLAGS + ISA_FLAGS[isa]).encode()).hexdigest()[:16]
    path = Path(cache_dir) / "kernels" / f"native-{digest}.so"
    if not path.exists():
        if progress:
            progress(COMPILING)
        why = _build(path, isa, options.cc)
        if why:
            return None, why
    try:
        kernel = NativeKernel(ctypes.CDLL(str(path)), threads, digest, str(path), isa)
        kernel.fn["hexa_pool_spin"](options.spin_us)
    except OSError as exc:
        return None, f"cannot load {path.name}: {exc}"
    why = _self_check(kernel)
    return (None, why) if why else (kernel, None)
