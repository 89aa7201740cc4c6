"""The memory a GGUF will take, known before it loads (``engine/model/footprint.py``), and the
one-line refusal of a model that cannot fit in what the system has left."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from engine.bench.random_gguf import Shape, write
from engine.errors import EngineError
from engine.model.footprint import check_fits, kv_bytes, packed_bytes
from engine.model.gguf_tensors import TensorFile
from engine.model.source import embedded_gguf

pytestmark = pytest.mark.slow
TEST_CACHE = Path(os.environ["HEXA_CACHE_DIR"])
TINY = Shape("qwen2", 256, 2, 4, 2, 64, 512)


def test_the_estimate_is_what_the_loaded_weights_take(engine):
    """The embedded model's weights, measured before packing them, against the loaded model's
    own count of its weight bytes."""
    estimate, fp32 = packed_bytes(TensorFile(embedded_gguf()))
    held = engine.resident_bytes()["weights"]
    assert fp32 == {}
    assert abs(estimate - held) <= 0.03 * held, (estimate, held)


@pytest.mark.parametrize("kind, size", [("F16", 2), ("BF16", 2), ("F32", 4)])
def test_f16_and_bf16_matrices_count_two_bytes_a_weight_f32_four(tmp_path, kind, size):
    path = write(tmp_path / f"{kind}.gguf", TINY, kind)
    r = TensorFile(path)
    matrices = sum(int(np.prod(t.shape)) for t in r.tensors if len(t.shape) >= 2)   # rows are whole panels here
    vectors = sum(int(np.prod(t.shape)) for t in r.tensors if len(t.shape) < 2)
    total, fp32 = packed_bytes(r)
    assert fp32 == ({"F32": 4 * matrices} if kind == "F32" else {})
    assert total == size * matrices + 4 * vectors


def test_a_model_that_cannot_fit_is_refused_in_one_line(tmp_path, monkeypatch):
    """Packing from the file (first start) and reading the packed file (later starts) both stop
    before they take the memory, naming what it would take and why."""
    import engine.heap
    from engine import Engine

    path = write(tmp_path / "f32.gguf", TINY, "F32")
    cache = tmp_path / "cache"
    cache.mkdir()
    (TEST_CACHE / "kernels").mkdir(parents=True, exist_ok=True)   # a fresh clone run alone has none yet
    (cache / "kernels").symlink_to(TEST_CACHE / "kernels", target_is_directory=True)   # built once
    monkeypatch.setattr(engine.heap, "available_memory", lambda: 20 * 2**20)
    with pytest.raises(EngineError) as refused:
        Engine.load(str(path), cache_dir=cache, threads=2)
    line = str(refused.value)
    assert line.startswith("f32.gguf: needs about 57 MB of memory (weights 53 MB, KV cache 4 MB) where 20 MB is "
                           "available; 52 MB of it F32 weights, which hexa keeps as fp32") and "\n" not in line

    monkeypatch.setattr(engine.heap, "available_memory", lambda: None)   # not known: not checked
    Engine.load(str(path), cache_dir=cache, threads=2)
    monkeypatch.setattr(engine.heap, "available_memory", lambda: 20 * 2**20)
    with pytest.raises(EngineError, match=r"needs about 5\d MB"):
        Engine.load(str(path), cache_dir=cache, threads=2)    # the packed file's size this time


def test_the_check_counts_the_kv_cache():
    class Config:
        num_layers, num_kv_heads, head_dim = 30, 3, 64
    kv = kv_bytes(Config, 4096, True)
    assert kv == 2 * 30 * 3 * 64 * 4096 * 2
    check_fits("m.gguf", 100, kv, 100 + kv)                   # exactly fits
    with pytest.raises(EngineError, match=r"m.gguf: needs about 90 MB .*KV cache 90 MB.*a shorter --context"):
        check_fits("m.gguf", 100, kv, 100 + kv - 1)


def test_the_headers_tensor_types_are_the_readers(tmp_path):
    """``tensor_types`` parses the tensor infos itself (no GGUFReader, whose vocabulary objects
    take seconds): the same weights by type as the gguf package's reader, and its type table is
    the package's enum."""
    from gguf import GGMLQuantizationType, GGUFReader

    from engine.model.gguf_header import GGML_TYPES, tensor_types
    assert all(GGMLQuantizationType(k).name == name for k, name in GGML_TYPES.items())
    for path in (embedded_gguf(), write(tmp_path / "f16.gguf", TINY, "F16")):
        counted: dict[str, int] = {}
        for t in GGUFReader(path).tensors:
            counted[t.tensor_type.name] = counted.get(t.tensor_type.name, 0) + int(np.prod(t.shape))
        assert tensor_types(path) == counted


def test_doctor_names_the_types_kept_as_panels(tmp_path):
    from app.doctor import _fp32_panels
    assert _fp32_panels(embedded_gguf()) == ""
    line = _fp32_panels(write(tmp_path / "f16.gguf", TINY, "F16"))
    assert line == "; of its weights F16 100% run as 2-byte fp panels (no integer kernels)"
    line = _fp32_panels(write(tmp_path / "f32.gguf", TINY, "F32"))
    assert line == "; of its weights F32 100% run as fp32 panels (4 bytes a weight, no integer kernels)"
