"""A GGUF's header, read without torch or numpy: enough to refuse a model hexa cannot run before
anything slow is imported or converted (the architecture is the header's first key)."""
from __future__ import annotations

from pathlib import Path

from ..errors import EngineError

# what the native forward pass runs from a GGUF (the fp32 conversion path runs llama and qwen2)
ARCHITECTURES = ("llama", "qwen2", "qwen3", "gemma3")


def header_value(path: Path, key: str):
    """One metadata value read straight from a GGUF's header, stopping there (``general.architecture``
    comes first): GGUFReader builds an object for every vocabulary entry (Gemma's 262k tokens held
    ~0.8 GB and took seconds), which a start that reads its packed codes never needs. ``key``
    None: the scalar and string values before the tokenizer's keys, as a dict."""
    import struct
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    formats = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    try:
        with open(path, "rb") as f:
            def read(fmt):
                return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

            def text():
                return f.read(read("<Q")).decode("utf-8", "replace")

            def value(kind):
                if kind == 8:
                    return text()
                if kind == 9:
                    inner, n = read("<I"), read("<Q")
                    if inner in sizes:
                        f.seek(sizes[inner] * n, 1)
                    else:
                        for _ in range(n):
                            value(inner)
                    return None
                return read(formats[kind])
            if f.read(4) != b"GGUF":
                raise ValueError("not a GGUF file")
            read("<I"), read("<Q")
            values = {}
            for _ in range(read("<Q")):
                name, kind = text(), read("<I")
                if key is None and name.startswith("tokenizer."):
                    break        # the vocabulary comes last: hundreds of thousands of strings
                found = value(kind)
                if name == key:
                    return found
                if found is not None:
                    values[name] = found
    except (OSError, ValueError, KeyError, struct.error) as exc:
        raise EngineError(f"{Path(path).name}: not a readable GGUF file ({exc.__class__.__name__})") from None
    return values if key is None else None


def header(path: Path) -> dict:
    """The scalars and strings of the header before the tokenizer's part (arrays are skipped)."""
    return header_value(path, None)  # type: ignore[arg-type]


# llama.cpp's general.file_type (enum llama_ftype): the quantization most of the weights use
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
              17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
              23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
              29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0"}


def check_architecture(path: Path, label: str, supported: tuple[str, ...] = ARCHITECTURES) -> str:
    """The GGUF's architecture, or EngineError in one line when hexa cannot run it."""
    arch = header_value(path, "general.architecture")
    if arch not in supported:
        only = "; qwen3 and gemma3 run on the torch backend's native kernels only" if arch in ARCHITECTURES else ""
        raise EngineError(f"{label}: architecture {arch!r} is not supported here "
                          f"(supported: {', '.join(supported)}{only})")
    return arch
