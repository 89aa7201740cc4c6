"""Native kernels, compiled on first use with the system C compiler and cached by source hash.

``small_linear(cache_dir, threads)`` returns ``(linear, why_not)``: ``linear(x, w, b)`` for fp32
contiguous tensors, or None with the reason it is not available (not x86 with AVX2/FMA, no C
compiler, a failed build or self-check). Callers fall back to torch's own linear then: hexa stays
lossless either way, since plain and speculative decoding share whichever kernel is in use.
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

SOURCE = Path(__file__).with_name("smallgemm.c")
FLAGS = ["-O3", "-mavx2", "-mfma", "-fopenmp", "-ffp-contract=off", "-shared", "-fPIC"]

Linear = Callable[[torch.Tensor, torch.Tensor, "torch.Tensor | None"], torch.Tensor]


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
            run = subprocess.run([cc, *FLAGS, str(SOURCE), "-o", str(tmp_so)],
                                 capture_output=True, text=True, check=False, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"compiling the kernel failed: cannot run {cc}: {exc.__class__.__name__}"
        if run.returncode != 0:
            first = (run.stderr.strip().splitlines() or ["unknown error"])[0]
            return f"compiling the kernel failed: {first}"
        os.replace(tmp_so, out)
    return None


def _load(path: Path, threads: int) -> Linear:
    fn = ctypes.CDLL(str(path)).hexa_linear
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 4
    fn.restype = None

    def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        x = x.contiguous()
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty(M, N, dtype=torch.float32)
        fn(x.data_ptr(), w.data_ptr(), None if b is None else b.data_ptr(), y.data_ptr(), M, N, K, threads)
        return y
    return linear


def _self_check(linear: Linear) -> str | None:
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(s, generator=g) for s in ((7, 83), (21, 83), (21,)))
    y = linear(x, w, b)
    if not torch.allclose(y, torch.nn.functional.linear(x, w, b), atol=1e-4):
        return "the kernel's self-check gave wrong results"
    if not all(torch.equal(linear(x[i:i + 1], w, b)[0], y[i]) for i in range(len(x))):
        return "the kernel's self-check found results that depend on the batch size"
    return None


def small_linear(cache_dir: Path, threads: int) -> tuple[Linear | None, str | None]:
    why = _cpu_supported()
    if why:
        return None, why
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(FLAGS).encode()).hexdigest()[:16]
    path = Path(cache_dir) / "kernels" / f"smallgemm-{digest}.so"
    if not path.exists():
        why = _build(path)
        if why:
            return None, why
    try:
        linear = _load(path, threads)
    except OSError as exc:
        return None, f"cannot load {path.name}: {exc}"
    why = _self_check(linear)
    return (None, why) if why else (linear, None)
