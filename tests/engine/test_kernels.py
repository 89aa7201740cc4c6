"""The native AVX2 kernel on packed weights: right results, batch invariance, row lookup, cached
build, clear fallback."""
from __future__ import annotations

import numpy as np
import pytest

from engine.runtime import reference as ref
from engine.runtime.kernels import host_isa, native_kernel

pytestmark = pytest.mark.skipif(host_isa()[1] is not None, reason=f"{host_isa()[1]}")


def randn(g: np.random.Generator, *shape: int) -> np.ndarray:
    return g.standard_normal(shape, dtype=np.float32)


@pytest.mark.parametrize("K", [576, 83, 8, 5])
@pytest.mark.parametrize("N", [1536, 100, 21, 16, 3])
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 9, 70])
def test_matches_the_reference(kernel, M, K, N):
    g = np.random.default_rng(K * N + M)
    x, w, b = randn(g, M, K), randn(g, N, K), randn(g, N)
    packed = kernel.pack(w)
    assert np.allclose(kernel.linear(x, packed, b), ref.linear(x, w, b), atol=1e-4, rtol=1e-5)
    assert np.allclose(kernel.linear(x, packed), ref.linear(x, w), atol=1e-4, rtol=1e-5)


def test_rows_do_not_depend_on_the_batch(kernel):
    """Bitwise: a row's output is the same alone, in any batch size and at any offset — what
    makes tree verification reproduce sequential greedy decoding exactly. Covers every tile
    shape (1-3 rows across several panels, 1-6 row tiles) and a ragged last panel group."""
    g = np.random.default_rng(1)
    x, w = randn(g, 300, 576), randn(g, 1000, 576)
    packed = kernel.pack(w)
    full = kernel.linear(x, packed)
    for m in (1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 33, 64, 256):
        for start in (0, 1, 300 - m):
            assert np.array_equal(kernel.linear(x[start:start + m], packed), full[start:start + m]), (m, start)


def test_packed_rows_read_back(kernel):
    """The embedding lookup and the calibration head index the packed output projection."""
    w = randn(np.random.default_rng(0), 50, 7)
    packed = kernel.pack(w)
    ids = np.array([0, 15, 16, 17, 49, 3, 3])
    assert np.array_equal(packed[ids], w[ids])
    assert np.array_equal(packed[[49]], w[[49]])
    assert packed.shape == w.shape and packed.nbytes == 64 * 7 * 4     # padded to whole panels


def test_non_contiguous_input_is_accepted(kernel):
    g = np.random.default_rng(0)
    x, w = randn(g, 576, 6).T, randn(g, 64, 576)
    assert not x.flags.c_contiguous
    assert np.allclose(kernel.linear(x, kernel.pack(w)), ref.linear(x, w), atol=1e-4)


def test_wrong_width_is_an_error_not_a_crash(kernel):
    with pytest.raises(ValueError, match="features"):
        kernel.linear(np.ones((2, 5), np.float32), kernel.pack(np.ones((4, 6), np.float32)))


@pytest.mark.slow                  # compiles the kernels: ~20 s on 2 cores
def test_built_once_and_cached(tmp_path):
    from engine.options import EngineOptions
    from engine.runtime.kernels import host_isas

    # the CPU's plainest build (AVX2 on x86): caching is the same for every build, and the VNNI
    # builds take 2x as long to compile (the session's engine and the driver tests compile those)
    options = EngineOptions(isa=host_isas()[0][-1])
    assert native_kernel(tmp_path, 1, options=options)[0] is not None
    built = list((tmp_path / "kernels").glob("*.so"))
    assert len(built) == 1
    mtime = built[0].stat().st_mtime_ns
    assert native_kernel(tmp_path, 1, options=options)[0] is not None
    assert built[0].stat().st_mtime_ns == mtime


def test_no_compiler_is_a_clear_fallback(tmp_path):
    from engine.options import EngineOptions

    k, why_not = native_kernel(tmp_path, 1, options=EngineOptions(cc=str(tmp_path / "no-such-cc")))   # engine.cc (CC)
    assert k is None and "compil" in why_not
    assert not list((tmp_path / "kernels").glob("*.so"))      # nothing half-built left behind


@pytest.mark.slow                  # builds the AVX2 kernels: about 45 s on 2 cores
def test_a_build_the_compiler_cannot_make_gives_way_to_the_next(tmp_path):
    """A compiler without the VNNI/AMX intrinsics (GCC before 11) must cost the tiles, not the
    native kernels: "auto" takes the next build this CPU runs, says which it passed over, and a
    later start does not compile the failed build again."""
    import shutil

    from engine.options import EngineOptions
    from engine.runtime.kernels import host_isas

    isas = host_isas()[0]
    if len(isas) < 2:
        pytest.skip("this CPU runs only the AVX2 build: nothing to fall back from")
    real = shutil.which("cc") or shutil.which("gcc")
    calls = tmp_path / "calls"
    old_cc = tmp_path / "old-cc"   # refuses the VNNI instruction sets, as GCC 10 does -mavxvnni
    old_cc.write_text(f"""#!/bin/sh
echo "$@" >> {calls}
for a in "$@"; do case "$a" in -mavxvnni|-mavx512vnni) echo "cc: error: unrecognized option '$a'" >&2; exit 1;; esac; done
exec {real} "$@"
""")
    old_cc.chmod(0o755)
    k, why = native_kernel(tmp_path, 1, options=EngineOptions(cc=str(old_cc)))
    assert why is None and k.isa == "avx2", (k and k.isa, why)
    passed = [i for i in isas if i != "avx2"]
    assert [i for i, _ in k.passed_over] == passed
    assert all(w.startswith("compiling the kernel failed: cc: error: unrecognized option") for _, w in k.passed_over)
    made = len(calls.read_text().splitlines())
    again, _ = native_kernel(tmp_path, 1, options=EngineOptions(cc=str(old_cc)))
    assert again.isa == "avx2" and again.passed_over == k.passed_over
    assert len(calls.read_text().splitlines()) == made                # no build tried again
    named, why = native_kernel(tmp_path, 1, options=EngineOptions(isa=isas[0], cc=str(old_cc)))
    assert named is None and "unrecognized option" in why           # a named build has no fallback


def test_engine_decodes_with_it(real_engine):
    from engine.runtime.kernels import PackedWeight

    model = real_engine.model
    assert model.kernel.startswith(("avx2 packed", "avx-vnni packed", "avx512-vnni packed", "amx packed"))
    assert isinstance(model.layers[0].wqkv, PackedWeight) and isinstance(model.lm_head, PackedWeight)


@pytest.mark.parametrize("length", [1, 5, 128, 129, 700])
def test_attention_matches_the_reference_and_rows_do_not_depend_on_the_batch(kernel, length):
    g = np.random.default_rng(length)
    rows = 3 * 8                                   # a GQA group of 3 x an 8-token tree
    q = randn(g, 3, rows, 64)
    k, v = randn(g, 3, 800, 64), randn(g, 3, 800, 64)
    mask = np.zeros((rows, length), np.float32)
    mask[1::2, length // 2 + 1:] = -np.inf         # half the rows see only the first half
    expected = ref.attention(q, k[:, :length], v[:, :length], mask)
    out = kernel.attention(q, k, v, length, mask)
    assert np.allclose(out, expected, atol=1e-5)
    for r in range(rows):                          # bitwise: alone, unmasked keys only, or in the batch
        assert np.array_equal(kernel.attention(q[:, r:r + 1], k, v, length, mask[r:r + 1])[:, 0], out[:, r])
    assert np.array_equal(kernel.attention(q[:, :1], k, v, length, None)[:, 0], out[:, 0])


def test_causal_prefill_attention_skips_masked_keys_without_changing_a_bit(kernel):
    # a 100-token prefill chunk after 190 cached tokens: rows span several 48-row work items and
    # keys span three 128-key chunks, most of the last ones masked (the kernel leaves those out)
    g = np.random.default_rng(11)
    start, S, group = 190, 100, 3
    L = start + S
    q = randn(g, 2, group * S, 64)
    k, v = randn(g, 2, 400, 64), randn(g, 2, 400, 64)
    causal = np.where(np.arange(L)[None] <= np.arange(start, L)[:, None], np.float32(0), np.float32(-np.inf))
    mask = np.tile(causal, (group, 1))
    out = kernel.attention(q, k, v, L, mask)
    expected = ref.attention(q, k[:, :L], v[:, :L], mask)
    assert np.allclose(out, expected, atol=1e-5)
    for r in (0, 47, 48, 150, 299):                # alone, over exactly the keys it sees
        seen = start + r % S + 1
        assert np.array_equal(kernel.attention(q[:, r:r + 1], k, v, seen, None)[:, 0], out[:, r])


def test_attention_rejects_other_head_sizes(kernel):
    with pytest.raises(ValueError, match="heads of"):
        kernel.attention(*(np.ones((1, n, 32), np.float32) for n in (2, 9, 9)), 9, None)
    with pytest.raises(ValueError, match="heads of"):
        kernel.attention(*(np.ones((1, n, 96), np.float32) for n in (2, 9, 9)), 9, None)


def test_attention_writes_token_major_rows_for_the_output_projection(kernel):
    g = np.random.default_rng(3)
    S, group, H = 4, 3, 2                          # 4 tokens, 3 query heads per kv head, 2 kv heads
    q = randn(g, H, group * S, 64)
    k, v = randn(g, H, 300, 64), randn(g, H, 300, 64)
    heads = kernel.attention(q, k, v, 290, None)                    # [H, group*S, 64]
    tokens = kernel.attention(q, k, v, 290, None, tokens=S)          # [S, H*group*64]
    expected = heads.reshape(H * group, S, 64).transpose(1, 0, 2).reshape(S, -1)
    assert tokens.shape == expected.shape and np.array_equal(tokens, expected)
    assert np.array_equal(kernel.attention(q * np.float32(0.125), k, v, 290, None, scaled=True), heads)


def test_linear_adds_into_the_residual_in_place(kernel):
    g = np.random.default_rng(4)
    x, w, b = randn(g, 5, 40), randn(g, 48, 40), randn(g, 48)
    packed = kernel.pack(w)
    res = randn(g, 5, 48)
    expected = res + kernel.linear(x, packed, b)
    out = kernel.linear(x, packed, b, residual=res)
    assert out is res and np.array_equal(out, expected)
    with pytest.raises(ValueError, match="residual"):
        kernel.linear(x, packed, residual=np.zeros((5, 47), np.float32))


@pytest.mark.parametrize("M", [1, 3, 70])
def test_rmsnorm_and_silu_match_the_reference_and_do_not_depend_on_the_batch(kernel, M):
    g = np.random.default_rng(M)
    x, w = randn(g, M, 576) * np.float32(3), randn(g, 576)
    out = kernel.rmsnorm(x, w, 1e-5)
    assert np.allclose(out, ref.rmsnorm(x, w, 1e-5), atol=1e-5, rtol=1e-5)
    gu = randn(g, M, 2 * 1536) * np.float32(4)
    g_, u = np.split(gu, 2, axis=-1)
    act = kernel.silu_mul(gu)
    assert np.allclose(act, ref.silu(g_) * u, atol=1e-5, rtol=1e-5)
    for m in range(M):
        assert np.array_equal(kernel.rmsnorm(x[m:m + 1], w, 1e-5)[0], out[m])
        assert np.array_equal(kernel.silu_mul(gu[m:m + 1])[0], act[m])


def test_rope_split_rotates_q_and_k_and_fills_the_cache(kernel):
    g = np.random.default_rng(5)
    S, Hq, Hkv, start = 5, 9, 3, 7
    qkv = randn(g, S, (Hq + 2 * Hkv) * 64)
    angles = randn(g, S, 64)
    cos, sin = np.cos(angles), np.sin(angles)
    kc, vc = np.zeros((Hkv, 20, 64), np.float32), np.zeros((Hkv, 20, 64), np.float32)
    q = kernel.rope_split(qkv, cos, sin, Hq, kc, vc, start, 0.125)
    heads = qkv.reshape(S, Hq + 2 * Hkv, 64).transpose(1, 0, 2)
    assert np.array_equal(q, ref.rope(heads[:Hq], cos, sin) * np.float32(0.125))   # same operations, same bits
    assert np.array_equal(kc[:, start:start + S], ref.rope(heads[Hq:Hq + Hkv], cos, sin))
    assert np.array_equal(vc[:, start:start + S], heads[Hq + Hkv:])
    assert not kc[:, :start].any() and not kc[:, start + S:].any()     # nothing else written
    with pytest.raises(ValueError, match="cache"):
        kernel.rope_split(qkv, cos, sin, Hq, kc, vc, 18, 1.0)            # would run past the cache


def test_native_layers_match_the_reference_layers(real_engine, monkeypatch):
    """The fused native path computes the same model as the numpy reference layers (to fp32 rounding), in
    the exact arithmetic (decoding's integer dot products are checked in test_kernels_fused)."""
    model = real_engine.model
    monkeypatch.setattr(model, "exact", True)     # and so an fp32 cache (kv_dtype)
    assert model.native is not None
    tokens = np.random.default_rng(6).integers(0, model.config.vocab_size, 70)

    def run():
        cache = model.new_cache(80)
        first = model.forward(tokens[:66], np.arange(66), cache)         # a prefill chunk (native layers)
        cache.commit(66)
        return first[-1:], model.forward(tokens[66:], np.arange(66, 70), cache)      # a 4-token step
    native = run()
    calls = []
    reference_layers = model._reference_layers
    monkeypatch.setattr(model, "_reference_layers", lambda *a: calls.append(1) or reference_layers(*a))
    kernel, model.native = model.native, None
    try:
        plain = run()
    finally:
        model.native = kernel
    assert len(calls) == 2                         # both passes ran the reference layers
    for a, b in zip(native, plain):
        assert np.allclose(model.logits(a), model.logits(b), atol=1e-3)


def test_calls_from_several_threads_take_turns(kernel):
    """The worker pool runs one job at a time; concurrent callers (a TUI worker and a bench, say)
    queue instead of mixing their jobs."""
    import threading

    g = np.random.default_rng(7)
    w = kernel.pack(randn(g, 200, 64))
    inputs = [randn(g, m, 64) for m in (1, 5, 9)]
    expected = [kernel.linear(x, w) for x in inputs]
    failures = []

    def hammer(x, want):
        for _ in range(300):
            if not np.array_equal(kernel.linear(x, w), want):
                failures.append(x.shape[0])
                return
    threads = [threading.Thread(target=hammer, args=pair) for pair in zip(inputs, expected)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


@pytest.mark.parametrize("n,m,k", [(4096, 403, 4), (4096, 0, 4), (100, 7, 32), (5, 0, 5), (17, 3, 1)])
def test_softmax_topk_matches_numpy_and_does_not_depend_on_the_batch(kernel, n, m, k):
    """Calibration's ranking: softmax over [scores | extra], its k largest probabilities largest
    first and their columns (extra's after the scores'), a row's the same alone as in a batch."""
    from engine.decoding.sampling import topk

    g = np.random.default_rng(n + m + k)
    scores = (randn(g, 70, n) * 4).astype(np.float32)
    extra = (randn(g, 70, m) * 4).astype(np.float32) if m else None
    probs, ids = kernel.softmax_topk(scores, extra, k)
    full = scores if extra is None else np.concatenate([scores, extra], axis=1)
    want_p, want_ids = topk(ref.softmax(full), k)
    assert ids.dtype == np.int64 and probs.shape == ids.shape == (70, k)
    assert np.array_equal(ids, want_ids)
    assert np.allclose(probs, want_p, rtol=2e-6, atol=1e-9)
    for r in (0, 1, 69):
        alone = kernel.softmax_topk(scores[r:r + 1], None if extra is None else extra[r:r + 1], k)
        assert np.array_equal(alone[0][0], probs[r]) and np.array_equal(alone[1][0], ids[r])


def test_softmax_topk_ties_masked_rows_and_bad_arguments(kernel):
    x = np.array([[1.0, 3.0, 3.0, 2.0], [-np.inf] * 4, [0.0, -np.inf, 0.0, -np.inf]], dtype=np.float32)
    probs, ids = kernel.softmax_topk(x, None, 3)
    assert ids[0].tolist() == [1, 2, 3]                 # equal values: the earlier column first
    assert np.all(probs[1] == 0)                         # nothing to rank: probabilities 0
    assert ids[2, :2].tolist() == [0, 2] and np.allclose(probs[2], [0.5, 0.5, 0.0])
    with pytest.raises(ValueError, match="k=5"):
        kernel.softmax_topk(x, None, 5)
    with pytest.raises(ValueError, match="rows"):
        kernel.softmax_topk(x, np.zeros((2, 3), np.float32), 2)
