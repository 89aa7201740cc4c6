"""F16 and BF16 matrices kept as 2-byte values in fp32 panels' order (``hexa_linear_half``): the
kernels widen them exactly and run the fp32 tiles, so every product is the fp32 panels' bit for
bit, at half their bytes. Checked on the kernel (any row count, widths off the panel grid), and on
whole models from F16 and BF16 files: the fp32-panel model's logits, lossless speculation, and
the weights' bytes."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from engine.bench.agreement import hexa_logits, prompt_logits
from engine.bench.random_gguf import Shape, write
from engine.runtime.kernels import PackedWeight, pack_half, widen

TEST_CACHE = Path(os.environ["HEXA_CACHE_DIR"])
SHAPE = Shape("qwen2", 256, 2, 4, 2, 64, 512)


def _values(kind: str, N: int, K: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((N, K)).astype(np.float32) * 0.1
    if kind == "F16":
        return x.astype(np.float16)
    return (x.view(np.uint32) >> 16).astype(np.uint16)      # bf16: the top half of each fp32


@pytest.mark.parametrize("kind", ["F16", "BF16"])
@pytest.mark.parametrize("N, K", [(37, 64), (100, 1536), (576, 576)])
def test_half_panels_give_the_fp32_panels_bits(kernel, kind, N, K):
    w = _values(kind, N, K, seed=N + K)
    half = PackedWeight(pack_half(w), (N, K), None, kernel)
    fp32 = kernel.pack(widen(w))
    assert fp32.data is not None and half.nbytes * 2 == fp32.nbytes
    rng = np.random.default_rng(1)
    for M in (1, 2, 3, 5, 7, 13, 40):
        x = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal(N).astype(np.float32)
        assert np.array_equal(kernel.linear(x, half, b).view(np.uint32), kernel.linear(x, fp32, b).view(np.uint32))
    rows = [0, N - 1, 5, 16, N // 2]
    assert np.array_equal(half[rows], widen(w)[rows])


def _load(path: Path, cache: Path):
    from engine import Engine
    cache.mkdir(exist_ok=True)
    if not (cache / "kernels").exists():
        (TEST_CACHE / "kernels").mkdir(parents=True, exist_ok=True)
        (cache / "kernels").symlink_to(TEST_CACHE / "kernels", target_is_directory=True)
    return Engine.load(str(path), cache_dir=cache, threads=2)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["F16", "BF16"])
def test_a_half_file_is_the_fp32_panel_model_at_half_the_bytes(kind, tmp_path, monkeypatch):
    from engine.model import gguf_model
    path = write(tmp_path / f"{kind}.gguf", SHAPE, kind)
    half = _load(path, tmp_path / "half")
    layer = half.model.layers[0]
    assert layer.wqkv.panel_bits and layer.wgu.panel_bits and half.model.lm_head.panel_bits
    ids = half.chat_ids([{"role": "user", "content": "Name three rivers and say where each one flows."}])
    decoding, prompt = hexa_logits(half, ids), prompt_logits(half, ids)
    tokens = {m: list(half.generate(ids, max_new_tokens=24, method=m))[-1].token_ids for m in ("vanilla", "hexa")}
    assert tokens["hexa"] == tokens["vanilla"]
    weights = half.resident_bytes()["weights"]

    monkeypatch.setattr(gguf_model, "HALF_TYPES", {})      # the same file as fp32 panels
    fp32 = _load(path, tmp_path / "fp32")
    assert not fp32.model.layers[0].wqkv.panel_bits
    assert np.array_equal(hexa_logits(fp32, ids).view(np.uint32), decoding.view(np.uint32))
    assert np.array_equal(prompt_logits(fp32, ids).view(np.uint32), prompt.view(np.uint32))
    assert list(fp32.generate(ids, max_new_tokens=24, method="vanilla"))[-1].token_ids == tokens["vanilla"]
    assert weights < 0.55 * fp32.resident_bytes()["weights"]


@pytest.mark.slow
def test_half_panels_survive_the_packed_file(tmp_path):
    """A later start reads the 2-byte panels back from the packed file (U16 / F16 arrays)."""
    path = write(tmp_path / "BF16.gguf", SHAPE, "BF16")
    first = _load(path, tmp_path / "c")
    ids = first.chat_ids([{"role": "user", "content": "Count to five."}])
    want = list(first.generate(ids, max_new_tokens=12, method="vanilla"))[-1].token_ids
    again = _load(path, tmp_path / "c")
    assert again.model.layers[1].wdown.data.dtype == np.uint16
    assert list(again.generate(ids, max_new_tokens=12, method="vanilla"))[-1].token_ids == want
