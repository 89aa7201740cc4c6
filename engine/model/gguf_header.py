"""A GGUF's header, read without torch or numpy: enough to refuse a model hexa cannot run before
anything slow is imported or converted (the architecture is the header's first key)."""
from __future__ import annotations

from pathlib import Path

from ..errors import EngineError

# what the native forward pass runs from a GGUF (the fp32 conversion path runs llama and qwen2)
ARCHITECTURES = ("llama", "qwen2", "qwen3", "gemma3")


class _Fields:
    """A GGUF's header read field by field from an open file (little-endian, version 2 or 3)."""
    SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

    def __init__(self, f) -> None:
        self.f = f
        if f.read(4) != b"GGUF":
            raise ValueError("not a GGUF file")
        self.read("<I")
        self.tensors, self.keys = self.read("<Q"), self.read("<Q")

    def read(self, fmt: str):
        import struct
        return struct.unpack(fmt, self.f.read(struct.calcsize(fmt)))[0]

    def text(self) -> str:
        return self.f.read(self.read("<Q")).decode("utf-8", "replace")

    def value(self, kind: int):
        """A scalar or string; an array is skipped (None)."""
        if kind == 8:
            return self.text()
        if kind == 9:
            self.skip_array()
            return None
        return self.read(self.FORMATS[kind])

    def skip_array(self) -> int:
        """An array's values skipped (a vocabulary's strings one by one); returns its length."""
        inner, n = self.read("<I"), self.read("<Q")
        if inner in self.SIZES:
            self.f.seek(self.SIZES[inner] * n, 1)
        else:
            for _ in range(n):
                self.value(inner)
        return n


def _readable(path: Path, fn):
    """``fn(_Fields)`` over the open file, or EngineError in one line when it is not a GGUF."""
    import struct
    try:
        with open(path, "rb") as f:
            return fn(_Fields(f))
    except (OSError, ValueError, KeyError, struct.error) as exc:
        raise EngineError(f"{Path(path).name}: not a readable GGUF file ({exc.__class__.__name__})") from None


def header_value(path: Path, key: str):
    """One metadata value read straight from a GGUF's header, stopping there (``general.architecture``
    comes first): GGUFReader builds an object for every vocabulary entry (Gemma's 262k tokens held
    ~0.8 GB and took seconds), which a start that reads its packed codes never needs. ``key``
    None: the scalar and string values before the tokenizer's keys, as a dict."""
    def find(h: _Fields):
        values = {}
        for _ in range(h.keys):
            name, kind = h.text(), h.read("<I")
            if key is None and name.startswith("tokenizer."):
                break        # the vocabulary comes last: hundreds of thousands of strings
            found = h.value(kind)
            if name == key:
                return found
            if found is not None:
                values[name] = found
        return values if key is None else None
    return _readable(path, find)


def read_metadata(h: _Fields, keep: tuple[str, ...] = ()) -> tuple[dict, dict[str, int], dict[str, list]]:
    """(every key's scalar or string value, every array key's length, the arrays named in ``keep``
    as lists) of the header at h, which is then at its tensor infos: a GGUF's config and vocabulary
    without GGUFReader's object per entry (reading Gemma-3-270M's config that way, 262k tokens, took
    a first load to 743 MB; 582 without)."""
    values, lengths, kept = {}, {}, {}
    for _ in range(h.keys):
        name, kind = h.text(), h.read("<I")
        if kind != 9:
            values[name] = h.value(kind)
        elif name in keep:
            kept[name] = _array(h, name)
            lengths[name] = len(kept[name])
        else:
            lengths[name] = h.skip_array()
    return values, lengths, kept


# ggml's scalar types as ``array`` type codes: an array of them is read in one call
_ARRAY_CODES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}


def _array(h: _Fields, name: str) -> list:
    """The array at h as a list: strings one by one, scalars in one read."""
    import sys
    from array import array

    inner, n = h.read("<I"), h.read("<Q")
    if inner == 8:
        return [h.text() for _ in range(n)]
    if inner not in _ARRAY_CODES:
        raise ValueError(f"array {name} of arrays")
    items = array(_ARRAY_CODES[inner], h.f.read(h.SIZES[inner] * n))
    if len(items) != n:
        raise ValueError(f"array {name} is cut")
    if sys.byteorder != "little":
        items.byteswap()
    return [bool(x) for x in items] if inner == 7 else items.tolist()


def read_arrays(path: Path, keys: tuple[str, ...]) -> tuple[dict, dict[str, list]]:
    """(every scalar and string value, the arrays named in ``keys`` as lists) of a GGUF's metadata:
    a tokenizer's vocabulary read as plain strings (GGUFReader's object per entry held ~0.2 GB for
    Gemma's 262k tokens); the other arrays are skipped. EngineError in one line if unreadable."""
    def read(h: _Fields):
        values, _, arrays = read_metadata(h, keys)
        return values, arrays
    return _readable(path, read)


def tensor_types(path: Path) -> dict[str, int]:
    """The weights of the GGUF's tensors by type name (F16, Q4_K, ...), from the tensor infos after
    the metadata (the vocabulary's strings are skipped one by one: ~0.3 s for 262k tokens)."""
    def count(h: _Fields) -> dict[str, int]:
        read_metadata(h)
        out: dict[str, int] = {}
        for _ in range(h.tensors):
            h.text()
            n = 1
            for _ in range(h.read("<I")):
                n *= h.read("<Q")
            kind = h.read("<I")
            h.read("<Q")
            name = GGML_TYPES.get(kind, f"type {kind}")
            out[name] = out.get(name, 0) + n
        return out
    return _readable(path, count)


def header(path: Path) -> dict:
    """The scalars and strings of the header before the tokenizer's part (arrays are skipped)."""
    return header_value(path, None)  # type: ignore[arg-type]


# llama.cpp's general.file_type (enum llama_ftype): the quantization most of the weights use
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
              17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
              23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
              29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0"}


# ggml's tensor types (enum ggml_type): what each tensor of a file is stored as
GGML_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
              11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS",
              18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8",
              25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0"}


def check_architecture(path: Path, label: str, supported: tuple[str, ...] = ARCHITECTURES) -> str:
    """The GGUF's architecture, or EngineError in one line when hexa cannot run it."""
    arch = header_value(path, "general.architecture")
    if arch not in supported:
        only = "; qwen3 and gemma3 run on the torch backend's native kernels only" if arch in ARCHITECTURES else ""
        raise EngineError(f"{label}: architecture {arch!r} is not supported here "
                          f"(supported: {', '.join(supported)}{only})")
    return arch
