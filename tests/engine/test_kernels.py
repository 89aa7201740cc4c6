"""The native AVX2 kernel on packed weights: right results, batch invariance, row lookup, cached
build, clear fallback."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.kernels import _cpu_supported, native_kernel

pytestmark = pytest.mark.skipif(_cpu_supported() is not None, reason=f"{_cpu_supported()}")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k, why_not = native_kernel(tmp_path_factory.mktemp("cache"), threads=2)
    assert k is not None, why_not
    return k


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


def test_built_once_and_cached(tmp_path):
    assert native_kernel(tmp_path, 1)[0] is not None
    built = list((tmp_path / "kernels").glob("*.so"))
    assert len(built) == 1
    mtime = built[0].stat().st_mtime_ns
    assert native_kernel(tmp_path, 1)[0] is not None
    assert built[0].stat().st_mtime_ns == mtime


def test_no_compiler_is_a_clear_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    k, why_not = native_kernel(tmp_path, 1)
    assert k is None and "compil" in why_not
    assert not list((tmp_path / "kernels").glob("*.so"))      # nothing half-built left behind


def test_engine_decodes_with_it(real_engine):
    from engine.kernels import PackedWeight

    model = real_engine.model
    assert "avx2 packed" in model.kernel
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


def test_attention_rejects_other_head_sizes(kernel):
    with pytest.raises(ValueError, match="64-dim"):
        kernel.attention(torch.randn(1, 2, 32), torch.randn(1, 9, 32), torch.randn(1, 9, 32), 9, None)
