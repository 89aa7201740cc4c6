"""The AVX2 small-rows linear: right results, batch invariance, cached build, clear fallback."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.kernels import _cpu_supported, small_linear

pytestmark = pytest.mark.skipif(_cpu_supported() is not None, reason=f"{_cpu_supported()}")


@pytest.fixture(scope="module")
def linear(tmp_path_factory):
    fn, why_not = small_linear(tmp_path_factory.mktemp("cache"), threads=2)
    assert fn is not None, why_not
    return fn


@pytest.mark.parametrize("K", [576, 83, 8, 5])
@pytest.mark.parametrize("N", [1536, 21, 8, 3])
def test_matches_torch(linear, K, N):
    g = torch.Generator().manual_seed(K * N)
    x, w, b = torch.randn(9, K, generator=g), torch.randn(N, K, generator=g), torch.randn(N, generator=g)
    assert torch.allclose(linear(x, w, b), F.linear(x, w, b), atol=1e-4, rtol=1e-5)
    assert torch.allclose(linear(x, w), F.linear(x, w), atol=1e-4, rtol=1e-5)


def test_rows_do_not_depend_on_the_batch(linear):
    """Bitwise: a row's output is the same alone, in any batch size and at any offset — what
    makes tree verification reproduce sequential greedy decoding exactly."""
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(40, 576, generator=g), torch.randn(1000, 576, generator=g)
    full = linear(x, w)
    for m in (1, 2, 3, 4, 5, 7, 8, 13, 16, 33):
        for start in (0, 1, 40 - m):
            assert torch.equal(linear(x[start:start + m], w), full[start:start + m]), (m, start)


def test_non_contiguous_input_is_accepted(linear):
    x, w = torch.randn(576, 6).t(), torch.randn(64, 576)
    assert torch.allclose(linear(x, w), F.linear(x, w), atol=1e-4)


def test_built_once_and_cached(tmp_path):
    assert small_linear(tmp_path, 1)[0] is not None
    built = list((tmp_path / "kernels").glob("*.so"))
    assert len(built) == 1
    mtime = built[0].stat().st_mtime_ns
    assert small_linear(tmp_path, 1)[0] is not None
    assert built[0].stat().st_mtime_ns == mtime


def test_no_compiler_is_a_clear_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    fn, why_not = small_linear(tmp_path, 1)
    assert fn is None and "compil" in why_not
    assert not list((tmp_path / "kernels").glob("*.so"))      # nothing half-built left behind


def test_engine_decodes_with_it(real_engine):
    assert "avx2" in real_engine.model.kernel
