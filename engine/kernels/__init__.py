"""Native kernels, compiled on first use with the system C compiler and cached by source hash.

``native_kernel(cache_dir, threads)`` returns ``(kernel, why_not)``: a ``NativeKernel`` whose
``pack(w)`` turns an fp32 weight [N, K] into a ``PackedWeight`` once, at load, and whose
``linear(x, packed, b)`` computes ``x @ w.T + b``; or None with the reason it is not available (not
x86 with AVX2/FMA, no C compiler, a failed build or self-check). Callers keep torch's own linear
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

import torch

SOURCES = [Path(__file__).with_name(n) for n in ("packed_gemm.c", "attention.c", "pool.c")]
HEADERS = [Path(__file__).with_name("pool.h")]
PANEL = 16   # output columns per packed panel (PW in packed_gemm.c)
FLAGS = ["-O3", "-mavx2", "-mfma", "-pthread", "-ffp-contract=off", "-shared", "-fPIC"]
ATTENTION_HEAD_DIM = 64   # attention.c is written for 64-dim heads (SmolLM2, Qwen2.5-0.5B)


class PackedWeight:
    """A weight [N, K] in the kernel's panel layout; ``w[ids]`` gives original rows back (the
    embedding lookup and the calibration head read rows of the tied output projection)."""
    __slots__ = ("data", "shape")

    def __init__(self, data: torch.Tensor, shape: tuple[int, int]):
        self.data = data
        self.shape = torch.Size(shape)

    @property
    def nbytes(self) -> int:
        return self.data.nbytes

    def __getitem__(self, ids) -> torch.Tensor:
        ids = torch.as_tensor(ids, dtype=torch.long)
        return self.data.view(-1, self.shape[1], PANEL)[ids // PANEL, :, ids % PANEL]


class NativeKernel:
    def __init__(self, lib: ctypes.CDLL, threads: int):
        self._linear = lib.hexa_linear
        self._linear.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 4
        self._linear.restype = None
        self._pack = lib.hexa_pack
        self._pack.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int] * 3
        self._pack.restype = None
        self._attention = lib.hexa_attention
        self._attention.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 3 + [ctypes.c_int64, ctypes.c_int]
        self._attention.restype = None
        self.threads = threads

    def pack(self, w: torch.Tensor) -> PackedWeight:
        w = w.to(torch.float32).contiguous()
        N, K = w.shape
        data = torch.empty(-(-N // PANEL) * PANEL * K, dtype=torch.float32)
        self._pack(w.data_ptr(), data.data_ptr(), N, K, self.threads)
        return PackedWeight(data, (N, K))

    def linear(self, x: torch.Tensor, w: PackedWeight, b: torch.Tensor | None = None) -> torch.Tensor:
        x = x.contiguous()
        M, K = x.shape
        N = w.shape[0]
        if K != w.shape[1]:
            raise ValueError(f"linear: input has {K} features, weight expects {w.shape[1]}")
        y = torch.empty(M, N, dtype=torch.float32)
        if b is not None:
            b = b.contiguous()
        self._linear(x.data_ptr(), w.data.data_ptr(), None if b is None else b.data_ptr(), y.data_ptr(),
                     M, N, K, self.threads)
        return y

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, length: int,
                  mask: torch.Tensor | None) -> torch.Tensor:
        """Softmax attention of q [H, R, 64] over the first ``length`` rows of one layer's cache
        k/v [H, capacity, 64]; ``mask`` is additive [R, length] or None. Returns [H, R, 64]."""
        H, R, D = q.shape
        if D != ATTENTION_HEAD_DIM or k.stride(2) != 1 or k.stride(1) != D or k.stride() != v.stride():
            raise ValueError("attention: needs 64-dim heads and a row-major cache")
        q = (q * D ** -0.5).contiguous()
        out = torch.empty(H, R, D, dtype=torch.float32)
        if mask is not None:
            mask = mask.contiguous()
        self._attention(q.data_ptr(), k.data_ptr(), v.data_ptr(), None if mask is None else mask.data_ptr(),
                        out.data_ptr(), H, R, length, k.stride(0), self.threads)
        return out


def _cpu_supported() -> str | None:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"no AVX2 kernel for {platform.machine()}"
    try:
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags")), "").split()
    except OSError:
        return "cannot read /proc/cpuinfo"
    missing = [f for f in ("avx2", "fma") if f not in flags]
    return f"CPU lacks {', '.join(missing)}" if missing else None


def _build(out: Path) -> str | None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return "no C compiler (cc/gcc) on PATH"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:   # rename: never a half-written .so
        tmp_so = Path(tmp) / out.name
        try:
            run = subprocess.run([cc, *FLAGS, *map(str, SOURCES), "-o", str(tmp_so), "-lm"],
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
    q, kc, vc = (torch.randn(s, generator=g) for s in ((2, 6, 64), (2, 300, 64), (2, 300, 64)))
    mask = torch.zeros(6, 290).index_fill_(1, torch.tensor([5, 289]), float("-inf"))
    ref = torch.nn.functional.scaled_dot_product_attention(q[None], kc[None, :, :290], vc[None, :, :290],
                                                           attn_mask=mask[None, None])[0]
    if not torch.allclose(kernel.attention(q, kc, vc, 290, mask), ref, atol=1e-5):
        return "the attention kernel's self-check gave wrong results"
    return None


def native_kernel(cache_dir: Path, threads: int) -> tuple[NativeKernel | None, str | None]:
    why = _cpu_supported()
    if why:
        return None, why
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES + HEADERS) + " ".join(FLAGS).encode()).hexdigest()[:16]
    path = Path(cache_dir) / "kernels" / f"packed-gemm-{digest}.so"
    if not path.exists():
        why = _build(path)
        if why:
            return None, why
    try:
        kernel = NativeKernel(ctypes.CDLL(str(path)), threads)
    except OSError as exc:
        return None, f"cannot load {path.name}: {exc}"
    why = _self_check(kernel)
    return (None, why) if why else (kernel, None)
