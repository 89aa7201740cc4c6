"""The native AVX2 kernel on packed weights: right results, batch invariance, row lookup, cached
build, clear fallback."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.runtime.kernels import host_isa, native_kernel

pytestmark = pytest.mark.skipif(host_isa()[1] is not None, reason=f"{host_isa()[1]}")


@pytest.mark.parametrize("K", [576, 83, 8, 5])
@pytest.mark.parametrize("N", [1536, 100, 21, 16, 3])
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 9, 70])
def test_matches_torch(kernel, M, K, N):
    g = torch.Generator().manual_seed(K * N + M)
    x, w, b = torch.randn(M, K, generator=g), torch.randn(N, K, generator=g), torch.randn(N, generator=g)
    packed = kernel.pack(w)
    assert torch.allclose(kernel.linear(x, packed, b), F.linear(x, w, b), atol=1e-4, rtol=1e-5)
    assert torch.allclose(kernel.linear(x, packed), F.linear(x, w), atol=1e-4, rtol=1e-5)


def test_rows_do_not_depend_on_the_batch(kernel):
    """Bitwise: a row's output is the same alone, in any batch size and at any offset — what
    makes tree verification reproduce sequential greedy decoding exactly. Covers every tile
    shape (1-3 rows across several panels, 1-6 row tiles) and a ragged last panel group."""
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(300, 576, generator=g), torch.randn(1000, 576, generator=g)
    packed = kernel.pack(w)
    full = kernel.linear(x, packed)
    for m in (1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 33, 64, 256):
        for start in (0, 1, 300 - m):
            assert torch.equal(kernel.linear(x[start:start + m], packed), full[start:start + m]), (m, start)


def test_packed_rows_read_back(kernel):
    """The embedding lookup and the calibration head index the packed output projection."""
    w = torch.randn(50, 7)
    packed = kernel.pack(w)
    ids = torch.tensor([0, 15, 16, 17, 49, 3, 3])
    assert torch.equal(packed[ids], w[ids])
    assert torch.equal(packed[[49]], w[[49]])
    assert packed.shape == w.shape and packed.nbytes == 64 * 7 * 4     # padded to whole panels


def test_non_contiguous_input_is_accepted(kernel):
    x, w = torch.randn(576, 6).t(), torch.randn(64, 576)
    assert torch.allclose(kernel.linear(x, kernel.pack(w)), F.linear(x, w), atol=1e-4)


def test_wrong_width_is_an_error_not_a_crash(kernel):
    with pytest.raises(ValueError, match="features"):
        kernel.linear(torch.randn(2, 5), kernel.pack(torch.randn(4, 6)))


@pytest.mark.slow                  # compiles the kernels: up to two minutes on 2 cores
def test_built_once_and_cached(tmp_path):
    assert native_kernel(tmp_path, 1)[0] is not None
    built = list((tmp_path / "kernels").glob("*.so"))
    assert len(built) == 1
    mtime = built[0].stat().st_mtime_ns
    assert native_kernel(tmp_path, 1)[0] is not None
    assert built[0].stat().st_mtime_ns == mtime


def test_no_compiler_is_a_clear_fallback(tmp_path):
    from engine.options import EngineOptions

    k, why_not = native_kernel(tmp_path, 1, options=EngineOptions(cc=str(tmp_path / "no-such-cc")))   # engine.cc (CC)
    assert k is None and "compil" in why_not
    assert not list((tmp_path / "kernels").glob("*.so"))      # nothing half-built left behind


def test_engine_decodes_with_it(real_engine):
    from engine.runtime.kernels import PackedWeight

    model = real_engine.model
    assert model.kernel.startswith(("avx2 packed", "avx-vnni packed", "avx512-vnni packed"))
    assert isinstance(model.layers[0].wqkv, PackedWeight) and isinstance(model.lm_head, PackedWeight)


@pytest.mark.parametrize("length", [1, 5, 128, 129, 700])
def test_attention_matches_torch_and_rows_do_not_depend_on_the_batch(kernel, length):
    g = torch.Generator().manual_seed(length)
    rows = 3 * 8                                   # a GQA group of 3 x an 8-token tree
    q = torch.randn(3, rows, 64, generator=g)
    k, v = torch.randn(3, 800, 64, generator=g), torch.randn(3, 800, 64, generator=g)
    mask = torch.zeros(rows, length)
    mask[1::2, length // 2 + 1:] = float("-inf")   # half the rows see only the first half
    ref = F.scaled_dot_product_attention(q[None], k[None, :, :length], v[None, :, :length],
                                         attn_mask=mask[None, None])[0]
    out = kernel.attention(q, k, v, length, mask)
    assert torch.allclose(out, ref, atol=1e-5)
    for r in range(rows):                          # bitwise: alone, unmasked keys only, or in the batch
        assert torch.equal(kernel.attention(q[:, r:r + 1], k, v, length, mask[r:r + 1])[:, 0], out[:, r])
    assert torch.equal(kernel.attention(q[:, :1], k, v, length, None)[:, 0], out[:, 0])


def test_causal_prefill_attention_skips_masked_keys_without_changing_a_bit(kernel):
    # a 100-token prefill chunk after 190 cached tokens: rows span several 48-row work items and
    # keys span three 128-key chunks, most of the last ones masked (the kernel leaves those out)
    g = torch.Generator().manual_seed(11)
    start, S, group = 190, 100, 3
    L = start + S
    q = torch.randn(2, group * S, 64, generator=g)
    k, v = torch.randn(2, 400, 64, generator=g), torch.randn(2, 400, 64, generator=g)
    causal = torch.where(torch.arange(L)[None] <= torch.arange(start, L)[:, None], 0.0, float("-inf"))
    mask = causal.repeat(group, 1)
    out = kernel.attention(q, k, v, L, mask)
    ref = F.scaled_dot_product_attention(q[None], k[None, :, :L], v[None, :, :L], attn_mask=mask[None, None])[0]
    assert torch.allclose(out, ref, atol=1e-5)
    for r in (0, 47, 48, 150, 299):                # alone, over exactly the keys it sees
        seen = start + r % S + 1
        assert torch.equal(kernel.attention(q[:, r:r + 1], k, v, seen, None)[:, 0], out[:, r])


def test_attention_rejects_other_head_sizes(kernel):
    with pytest.raises(ValueError, match="heads of"):
        kernel.attention(torch.randn(1, 2, 32), torch.randn(1, 9, 32), torch.randn(1, 9, 32), 9, None)
    with pytest.raises(ValueError, match="heads of"):
        kernel.attention(torch.randn(1, 2, 96), torch.randn(1, 9, 96), torch.randn(1, 9, 96), 9, None)


def test_attention_writes_token_major_rows_for_the_output_projection(kernel):
    g = torch.Generator().manual_seed(3)
    S, group, H = 4, 3, 2                          # 4 tokens, 3 query heads per kv head, 2 kv heads
    q = torch.randn(H, group * S, 64, generator=g)
    k, v = torch.randn(H, 300, 64, generator=g), torch.randn(H, 300, 64, generator=g)
    heads = kernel.attention(q, k, v, 290, None)                    # [H, group*S, 64]
    tokens = kernel.attention(q, k, v, 290, None, tokens=S)          # [S, H*group*64]
    expected = heads.view(H * group, S, 64).transpose(0, 1).reshape(S, -1)
    assert torch.equal(tokens, expected)
    assert torch.equal(kernel.attention(q * 0.125, k, v, 290, None, scaled=True), heads)


def test_linear_adds_into_the_residual_in_place(kernel):
    g = torch.Generator().manual_seed(4)
    x, w, b = torch.randn(5, 40, generator=g), torch.randn(48, 40, generator=g), torch.randn(48, generator=g)
    packed = kernel.pack(w)
    res = torch.randn(5, 48, generator=g)
    expected = res + kernel.linear(x, packed, b)
    out = kernel.linear(x, packed, b, residual=res)
    assert out is res and torch.equal(out, expected)
    with pytest.raises(ValueError, match="residual"):
        kernel.linear(x, packed, residual=torch.zeros(5, 47))


@pytest.mark.parametrize("M", [1, 3, 70])
def test_rmsnorm_and_silu_match_torch_and_do_not_depend_on_the_batch(kernel, M):
    g = torch.Generator().manual_seed(M)
    x, w = torch.randn(M, 576, generator=g) * 3, torch.randn(576, generator=g)
    ref = w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))
    out = kernel.rmsnorm(x, w, 1e-5)
    assert torch.allclose(out, ref, atol=1e-5, rtol=1e-5)
    gu = torch.randn(M, 2 * 1536, generator=g) * 4
    g_, u = gu.chunk(2, dim=-1)
    act = kernel.silu_mul(gu)
    assert torch.allclose(act, F.silu(g_) * u, atol=1e-5, rtol=1e-5)
    for m in range(M):
        assert torch.equal(kernel.rmsnorm(x[m:m + 1], w, 1e-5)[0], out[m])
        assert torch.equal(kernel.silu_mul(gu[m:m + 1])[0], act[m])


def test_rope_split_rotates_q_and_k_and_fills_the_cache(kernel):
    from engine.runtime.transformer import CompactTransformer

    g = torch.Generator().manual_seed(5)
    S, Hq, Hkv, start = 5, 9, 3, 7
    qkv = torch.randn(S, (Hq + 2 * Hkv) * 64, generator=g)
    angles = torch.randn(S, 64, generator=g)
    cos, sin = angles.cos(), angles.sin()
    kc, vc = torch.zeros(Hkv, 20, 64), torch.zeros(Hkv, 20, 64)
    q = kernel.rope_split(qkv, cos, sin, Hq, kc, vc, start, 0.125)
    heads = qkv.view(S, Hq + 2 * Hkv, 64).transpose(0, 1)
    rope = CompactTransformer._rope
    assert torch.equal(q, rope(heads[:Hq], cos, sin) * 0.125)            # same operations, same bits
    assert torch.equal(kc[:, start:start + S], rope(heads[Hq:Hq + Hkv], cos, sin))
    assert torch.equal(vc[:, start:start + S], heads[Hq + Hkv:])
    assert not kc[:, :start].any() and not kc[:, start + S:].any()     # nothing else written
    with pytest.raises(ValueError, match="cache"):
        kernel.rope_split(qkv, cos, sin, Hq, kc, vc, 18, 1.0)            # would run past the cache


def test_native_layers_match_the_torch_layers(real_engine, monkeypatch):
    """The fused native path computes the same model as the torch glue (to fp32 rounding), in
    the exact arithmetic (decoding's integer dot products are checked in test_kernels_fused)."""
    model = real_engine.model
    monkeypatch.setattr(model, "exact", True)     # and so an fp32 cache (kv_dtype)
    assert model.native is not None
    tokens = torch.randint(0, model.config.vocab_size, (70,), generator=torch.Generator().manual_seed(6))

    def run():
        cache = model.new_cache(80)
        first = model.forward(tokens[:66], torch.arange(66), cache)      # a prefill chunk (flash attention)
        cache.commit(66)
        return first[-1:], model.forward(tokens[66:], torch.arange(66, 70), cache)   # a 4-token step
    native = run()
    kernel, model.native = model.native, None
    try:
        plain = run()
    finally:
        model.native = kernel
    for a, b in zip(native, plain):
        assert torch.allclose(model.logits(a), model.logits(b), atol=1e-3)


def test_calls_from_several_threads_take_turns(kernel):
    """The worker pool runs one job at a time; concurrent callers (a TUI worker and a bench, say)
    queue instead of mixing their jobs."""
    import threading

    g = torch.Generator().manual_seed(7)
    w = kernel.pack(torch.randn(200, 64, generator=g))
    inputs = [torch.randn(m, 64, generator=g) for m in (1, 5, 9)]
    expected = [kernel.linear(x, w) for x in inputs]
    failures = []

    def hammer(x, want):
        for _ in range(300):
            if not torch.equal(kernel.linear(x, w), want):
                failures.append(x.shape[0])
                return
    threads = [threading.Thread(target=hammer, args=pair) for pair in zip(inputs, expected)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
