"""The 4-bit kernel: weights that came from Q4_1 are found exactly, and decoding on their codes
gives the fp32 kernel's results bit for bit; anything else keeps the fp32 path only."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.kernels import Q4_ROWS, PackedWeight, _cpu_supported, native_kernel
from engine.kernels.quant import pack_q4, recover_q4

pytestmark = pytest.mark.skipif(_cpu_supported() is not None, reason=f"{_cpu_supported()}")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k, why_not = native_kernel(tmp_path_factory.mktemp("cache"), threads=2)
    assert k is not None, why_not
    return k


def q4_1(N: int, K: int, seed: int = 0) -> torch.Tensor:
    """Quantize random weights as llama.cpp's Q4_1 does (fp16 d and min per 32 inputs) and
    dequantize them as gguf does (numpy: d * q + m in fp32): what the model cache holds."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((N, K // 32, 32)).astype(np.float32) * rng.uniform(0.01, 2, (N, K // 32, 1)).astype(np.float32)
    lo, hi = w.min(-1, keepdims=True), w.max(-1, keepdims=True)
    d = ((hi - lo) / 15).astype(np.float16)
    m = lo.astype(np.float16)
    q = np.clip(np.floor((w - m.astype(np.float32)) / np.maximum(d.astype(np.float32), 1e-30) + 0.5), 0, 15).astype(np.uint8)
    return torch.from_numpy((d.astype(np.float32) * q + m.astype(np.float32)).reshape(N, K))


def fp32_only(p: PackedWeight) -> PackedWeight:
    return PackedWeight(p.data, tuple(p.shape), None)


def test_codes_are_recovered_exactly():
    w = q4_1(40, 96)
    q, d, m = recover_q4(w)
    assert q.dtype == torch.uint8 and int(q.max()) <= 15
    rebuilt = torch.mul(d.repeat_interleave(32, 1), q.float()).add(m.repeat_interleave(32, 1))
    assert torch.equal(rebuilt, w)


def test_constant_blocks_and_zero_rows_are_q4():
    w = q4_1(16, 64)
    w[3] = 0.0
    w[5, :32] = 0.25
    assert pack_q4(w) is not None


@pytest.mark.parametrize("why", ["random", "one changed weight", "width not a multiple of 32", "nan"])
def test_other_weights_get_no_4bit_copy(why):
    w = {"random": torch.randn(32, 64), "width not a multiple of 32": q4_1(32, 96)[:, :80].contiguous()}.get(why, q4_1(32, 64))
    if why == "one changed weight":
        w[7, 9] = torch.nextafter(w[7, 9], torch.tensor(10.0))
    if why == "nan":
        w[0, 0] = float("nan")
    assert pack_q4(w) is None


@pytest.mark.parametrize("N", [1536, 40, 16, 5])
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 6, 7, 8, 9, 12])
def test_4bit_kernel_gives_the_fp32_kernels_bits(kernel, M, N):
    """Every tile shape (1-6 rows, 1-3 leftover rows across panels), a ragged last panel, bias
    and in-place residual: bit-identical to the fp32 kernel on the same weights."""
    g = torch.Generator().manual_seed(M * 1000 + N)
    w = q4_1(N, 576, seed=N)
    packed = kernel.pack(w)
    assert packed.q4 is not None and M <= Q4_ROWS
    x, b = torch.randn(M, 576, generator=g), torch.randn(N, generator=g)
    assert torch.equal(kernel.linear(x, packed, b), kernel.linear(x, fp32_only(packed), b))
    r = torch.randn(M, N, generator=g)
    r2 = r.clone()
    assert torch.equal(kernel.linear(x, packed, residual=r), kernel.linear(x, fp32_only(packed), residual=r2))
    assert torch.allclose(kernel.linear(x, packed, b), torch.nn.functional.linear(x, w, b), atol=1e-3, rtol=1e-4)


def test_engine_projections_use_4bit_codes(real_engine):
    """The embedded model is Q4_1 at its source: every projection has its 4-bit copy; the output
    head (Q8_0 at the source) has none."""
    model = real_engine.model
    slots = [getattr(L, s) for L in model.layers for s in ("wqkv", "wo", "wgu", "wdown")]
    assert all(isinstance(w, PackedWeight) and w.q4 is not None for w in slots)
    assert model.lm_head.q4 is None
    # codes + scales of a projection: ~0.75 bytes per weight (4-bit codes, fp32 d and m per 32)
    w = slots[0]
    assert w.q4.nbytes < 0.2 * w.data.nbytes
