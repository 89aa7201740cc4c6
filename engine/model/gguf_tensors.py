"""A GGUF's tensors over one read-only mapping of the file, for its config and for packing them: the
metadata and tensor infos read from the header (``gguf_header``'s field reader), no objects per entry. GGUFReader builds an object
for every vocabulary entry, which packing never reads: a first start held them beside the packed
codes (~160 MB for a 151k-token vocabulary, ~0.8 GB for Gemma's 262k). The tensors are GGUFReader's
own: the same names, types, shapes and data views (``tests/engine/test_footprint.py`` compares them)."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import EngineError
from .gguf_header import _Fields, _readable, read_metadata

ALIGNMENT = 32   # GGUF's default, unless general.alignment says otherwise


class Tensor(NamedTuple):
    name: str
    tensor_type: object     # gguf.GGMLQuantizationType
    shape: np.ndarray       # the GGUF's dims, innermost first (GGUFReader's ``shape``)
    data: np.ndarray        # a view of the mapping: typed for F32/F16/ints, else bytes [rows, bytes a row]


class TensorFile:
    """``tensors`` and ``data`` (the np.memmap they view) of the GGUF at ``path``, and its header's
    ``values`` and array ``lengths`` (``read_metadata``); EngineError in one line where it is not a
    readable GGUF."""

    def __init__(self, path: Path) -> None:
        (self.values, self.lengths), infos, start = _readable(path, _header)
        self.data = np.memmap(path, mode="r")
        try:
            self.tensors = [_tensor(self.data, start, *info) for info in infos]
        except ValueError as exc:   # a tensor past the file's end (a cut download), an unknown type
            raise EngineError(f"{Path(path).name}: not a readable GGUF file ({exc.__class__.__name__})") from None


def _header(h: _Fields) -> tuple[tuple[dict, dict[str, int]], list[tuple], int]:
    """(the metadata, [(name, dims, type, offset)], where the tensors' data starts) of the header at h"""
    values, lengths, _ = read_metadata(h)
    alignment = int(values.get("general.alignment") or ALIGNMENT)
    infos = []
    for _ in range(h.tensors):
        name = h.text()
        dims = [h.read("<Q") for _ in range(h.read("<I"))]
        infos.append((name, dims, h.read("<I"), h.read("<Q")))
    at = h.f.tell()
    return (values, lengths), infos, -(-at // alignment) * alignment


_TYPED = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8, "I16": np.int16,
          "I32": np.int32, "I64": np.int64}


def _tensor(data: np.memmap, start: int, name: str, dims: list[int], kind: int, offset: int) -> Tensor:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    from gguf.quants import quant_shape_to_byte_shape

    ggml_type = GGMLQuantizationType(kind)
    n = int(np.prod(dims))
    shape = tuple(reversed(dims))
    block, size = GGML_QUANT_SIZES[ggml_type]
    at = start + offset
    dtype = _TYPED.get(ggml_type.name)
    if dtype is None:   # blocks of a quantized type (BF16 too): bytes
        view = data[at:at + n * size // block].reshape(quant_shape_to_byte_shape(shape, ggml_type))
    else:
        view = data[at:at + n * np.dtype(dtype).itemsize].view(dtype).reshape(shape)
    return Tensor(name, ggml_type, np.array(dims, np.uint64), view)
