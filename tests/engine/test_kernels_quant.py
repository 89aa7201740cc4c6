"""The quantized kernel: weights that came from Q4_1 or Q8_0 are found exactly, and decoding on
their codes gives the fp32 kernel's results bit for bit; anything else keeps the fp32 path only."""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine.runtime import reference
from engine.runtime.kernels import QUANT_ROWS, PackedWeight, host_isa

pytestmark = pytest.mark.skipif(host_isa()[1] is not None, reason=f"{host_isa()[1]}")


def gguf_weights(fmt: str, N: int, K: int, seed: int = 0) -> np.ndarray:
    """Quantize random weights as llama.cpp does (fp16 scales per 32 inputs) and dequantize them
    as gguf does (numpy, fp32): what the model cache holds for a Q4_1 / Q8_0 model."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((N, K // 32, 32)).astype(np.float32) * rng.uniform(0.01, 2, (N, K // 32, 1)).astype(np.float32)
    if fmt == "Q4_1":
        lo, hi = w.min(-1, keepdims=True), w.max(-1, keepdims=True)
        d, m = ((hi - lo) / 15).astype(np.float16).astype(np.float32), lo.astype(np.float16).astype(np.float32)
        q = np.clip(np.floor((w - m) / np.maximum(d, 1e-30) + 0.5), 0, 15)
        return (d * q + m).astype(np.float32).reshape(N, K)
    d = (np.abs(w).max(-1, keepdims=True) / 127).astype(np.float16).astype(np.float32)
    q = np.round(w / np.maximum(d, 1e-30)).astype(np.int8)
    return (d * q).astype(np.float32).reshape(N, K)


def fp32_only(p: PackedWeight) -> PackedWeight:
    return PackedWeight(p.data, tuple(p.shape), None)


def codes_only(p: PackedWeight) -> PackedWeight:
    return PackedWeight(None, tuple(p.shape), (p.quant, p.bits), p.kernel)


def bits(kernel, w: np.ndarray) -> int:
    found = kernel.pack_quantized(w)
    return found[1] if found else 0


def test_each_weight_gets_its_own_format(kernel):
    assert bits(kernel, gguf_weights("Q4_1", 16, 64)) == 4
    assert bits(kernel, gguf_weights("Q8_0", 16, 64)) == 8


def test_constant_blocks_and_zero_rows_are_quantized(kernel):
    w = gguf_weights("Q4_1", 16, 64)
    w[3] = 0.0
    w[5, :32] = 0.25
    assert bits(kernel, w) == 4


@pytest.mark.parametrize("why", ["random", "one changed weight", "a negative zero", "width not a multiple of 32",
                                 "nan"])
def test_other_weights_get_no_quantized_copy(kernel, why):
    w = {"random": np.random.default_rng(0).standard_normal((32, 64), dtype=np.float32),
         "width not a multiple of 32": np.ascontiguousarray(gguf_weights("Q4_1", 32, 96)[:, :80])
         }.get(why, gguf_weights("Q8_0", 32, 64))
    if why == "one changed weight":
        w[7, 9] = np.nextafter(w[7, 9], np.float32(10.0))
    if why == "a negative zero":      # == would accept it; the kernel would rebuild +0
        w[2, 3] = -0.0 if w[2, 3] == 0 else w[2, 3]
        w[2, 3 + 32] = -0.0
        w[2, 4 + 32] = 0.0
    if why == "nan":
        w[0, 0] = float("nan")
    assert bits(kernel, w) == 0


@pytest.mark.parametrize("fmt", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("N", [1536, 40, 16, 5])
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 6, 7, 8, 9, 12])
def test_quantized_kernel_gives_the_fp32_kernels_bits(kernel, fmt, M, N):
    """Every tile shape (1-6 rows, 1-3 leftover rows across panels), a ragged last panel, bias
    and in-place residual: bit-identical to the fp32 kernel on the same weights."""
    g = np.random.default_rng(M * 1000 + N)
    w = gguf_weights(fmt, N, 576, seed=N)
    packed = kernel.pack(w, keep_fp32=True)
    assert packed.bits == (4 if fmt == "Q4_1" else 8) and M <= QUANT_ROWS
    x, b = g.standard_normal((M, 576), dtype=np.float32), g.standard_normal(N, dtype=np.float32)
    assert np.array_equal(kernel.linear(x, packed, b), kernel.linear(x, fp32_only(packed), b))
    r = g.standard_normal((M, N), dtype=np.float32)
    r2 = r.copy()
    assert np.array_equal(kernel.linear(x, packed, residual=r), kernel.linear(x, fp32_only(packed), residual=r2))
    assert np.allclose(kernel.linear(x, packed, b), reference.linear(x, w, b), atol=1e-3, rtol=1e-4)


@pytest.mark.parametrize("fmt", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("M", [13, 16, 31, 64, 257])
def test_codes_alone_give_the_fp32_kernels_bits_for_prefill_chunks(kernel, fmt, M):
    """More rows than QUANT_ROWS rebuild each work item's panels from the codes once and run the
    fp32 tiles on them: still the fp32 kernel's bits, so the codes can be a weight's only copy."""
    g = np.random.default_rng(M)
    packed = kernel.pack(gguf_weights(fmt, 40, 576, seed=M), keep_fp32=True)
    x, b, r = (g.standard_normal(shape, dtype=np.float32) for shape in ((M, 576), (40,), (M, 40)))
    assert np.array_equal(kernel.linear(x, codes_only(packed), b), kernel.linear(x, fp32_only(packed), b))
    r2 = r.copy()
    assert np.array_equal(kernel.linear(x, codes_only(packed), residual=r), kernel.linear(x, fp32_only(packed), residual=r2))


@pytest.mark.parametrize("fmt", ["Q4_1", "Q8_0"])
def test_rows_read_back_from_codes(kernel, fmt):
    w = gguf_weights(fmt, 40, 96, seed=3)
    packed = kernel.pack(w)
    assert packed.data is None
    ids = np.array([[0, 17], [39, 5]])
    assert packed[ids].shape == (2, 2, 96) and np.array_equal(packed[ids], w[ids])


def test_engine_weights_keep_only_their_source_codes(real_engine):
    """The embedded model is Q4_1 (projections) and Q8_0 (the tied embedding / output head) at its
    source: every one of them is held as its codes alone with fp16 heads (layout.h's HEAD_F16),
    0.156 / 0.266 of the fp32 bytes: the GGUF's own 0.625 and 1.0625 bytes a weight."""
    from engine.model.gguf_codes import HEAD_F16
    model = real_engine.model
    slots = [getattr(L, s) for L in model.layers for s in ("wqkv", "wo", "wgu", "wdown")]
    assert all(isinstance(w, PackedWeight) and w.bits == 4 | HEAD_F16 and w.data is None for w in slots)
    assert model.lm_head.bits == 8 | HEAD_F16 and model.lm_head.data is None and model.embed is model.lm_head
    N, K = slots[0].shape
    assert slots[0].nbytes / (N * K * 4) == pytest.approx(0.15625, rel=0.01)
    assert model.lm_head.nbytes / (math.prod(model.lm_head.shape) * 4) == pytest.approx(0.265625, rel=0.01)
