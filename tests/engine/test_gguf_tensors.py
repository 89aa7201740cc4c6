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


@pytest.mark.parametrize("shape", ["embedded", "gemma3"])
def test_the_headers_metadata_is_the_readers(tmp_path, shape):
    """The header's metadata (``read_metadata``: what a first start's config is made of): every
    scalar and string GGUFReader reads, and every array's length, without an object per entry."""
    path = embedded_gguf() if shape == "embedded" else write(tmp_path / "g.gguf", Shape("gemma3", 256, 2, 4, 1, 64, 512), "Q8_0")
    f = TensorFile(path)
    values, lengths = f.values, f.lengths
    fields = gguf.GGUFReader(path).fields
    for name, f in fields.items():
        if name.startswith("GGUF."):         # the reader's own entries (version, counts)
            continue
        if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
            assert lengths[name] == len(f.data), name
        else:
            want = f.contents()
            assert values[name] == (pytest.approx(want) if isinstance(want, float) else want), name
    assert set(values) | set(lengths) == {n for n in fields if not n.startswith("GGUF.")}
