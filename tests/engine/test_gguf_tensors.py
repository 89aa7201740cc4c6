"""A GGUF's tensors read for packing (``engine/model/gguf_tensors.py``): GGUFReader's own tensors,
without its metadata objects, and a cut file refused in one line."""
from __future__ import annotations

import gguf
import numpy as np
import pytest

from engine.bench.random_gguf import Shape, write
from engine.errors import EngineError
from engine.model.gguf_tensors import TensorFile
from engine.model.source import embedded_gguf


def same_tensors(path) -> None:
    mine, theirs = TensorFile(path).tensors, gguf.GGUFReader(path).tensors
    assert [t.name for t in mine] == [t.name for t in theirs]
    for a, b in zip(mine, theirs):
        assert a.tensor_type == b.tensor_type and np.array_equal(a.shape, b.shape), a.name
        assert a.data.dtype == b.data.dtype and a.data.shape == b.data.shape, a.name
        assert np.array_equal(a.data, b.data), a.name


def test_the_tensors_are_ggufreaders():
    same_tensors(embedded_gguf())                          # Q4_1 and Q8_0 blocks, F32 norms


@pytest.mark.parametrize("kind", ["F16", "Q8_0"])
def test_typed_and_block_tensors_of_a_written_file(tmp_path, kind):
    same_tensors(write(tmp_path / f"tiny-{kind}.gguf", Shape("qwen2", 256, 2, 4, 2, 64, 512), kind))


def test_a_cut_file_is_one_line(tmp_path):
    path = write(tmp_path / "tiny.gguf", Shape("qwen2", 256, 2, 4, 2, 64, 512), "Q8_0")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    for bad in (cut, tmp_path / "missing.gguf"):
        with pytest.raises(EngineError) as error:
            TensorFile(bad)
        assert str(error.value).startswith(f"{bad.name}: not a readable GGUF file") and "\n" not in str(error.value)
