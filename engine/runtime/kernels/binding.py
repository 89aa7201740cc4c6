"""The ctypes binding, read from ``hexa.h`` rather than written twice.

``Header.read(path)`` parses the header's ``#define`` constants, its structs (one field per line)
and its function prototypes; ``bind(lib)`` returns the library's functions with argument and
result types set from those prototypes, and ``struct(name)`` a ``ctypes.Structure`` with the
header's fields. A function whose declaration changes changes its binding with it; a call with
the wrong number of arguments fails in ctypes instead of passing garbage. The test suite also
compiles a probe against the header and compares sizes and offsets with the ctypes structs.
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from pathlib import Path

SCALARS = {"float": ctypes.c_float, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
           "int": ctypes.c_int, "void": None}

_DEFINE = re.compile(r"^#define\s+(HEXA_\w+)\s+(-?\d+)\b", re.M)
_STRUCT = re.compile(r"^struct\s+(\w+)\s*\{(.*?)^\};", re.M | re.S)
_FUNC = re.compile(r"^(\w+)\s+(hexa_\w+)\((.*?)\);", re.M)


def _ctype(decl: str, structs: dict):
    """The ctypes type of a C declaration's type part, e.g. ``const float *`` or ``int32_t``."""
    text = decl.replace("const", " ").strip()
    if "*" in text:
        base = text.replace("*", " ").split()
        if base[0] == "struct":
            return ctypes.POINTER(structs[base[1]]) if base[1] in structs else ctypes.c_void_p
        return ctypes.c_void_p
    if text not in SCALARS:
        raise ValueError(f"hexa.h: type {text!r} is not one the binding knows")
    return SCALARS[text]


def _split(decl: str) -> tuple[str, str]:
    """(type, name) of ``const float *x``."""
    m = re.match(r"^(.*?)(\w+)$", decl.strip())
    if not m:
        raise ValueError(f"hexa.h: cannot read declaration {decl!r}")
    return m.group(1), m.group(2)


@dataclass
class Header:
    constants: dict[str, int] = field(default_factory=dict)
    structs: dict[str, type] = field(default_factory=dict)
    functions: dict[str, tuple[list[str], list, object]] = field(default_factory=dict)  # names, argtypes, restype

    @classmethod
    def read(cls, path: Path) -> "Header":
        text = re.sub(r"/\*.*?\*/", "", Path(path).read_text(), flags=re.S)
        h = cls({name: int(v) for name, v in _DEFINE.findall(text)})
        for name, body in _STRUCT.findall(text):
            fields = []
            for line in body.split(";"):
                if line.strip():
                    ctype, fname = _split(line)
                    fields.append((fname, _ctype(ctype, h.structs)))
            h.structs[name] = type(name, (ctypes.Structure,), {"_fields_": fields})
        for ret, name, args in _FUNC.findall(text):
            params = [_split(a) for a in args.split(",") if a.strip()]
            h.functions[name] = ([p for _, p in params], [_ctype(t, h.structs) for t, _ in params],
                                 _ctype(ret, h.structs))
        return h

    def bind(self, lib: ctypes.CDLL) -> dict[str, ctypes._CFuncPtr]:
        out = {}
        for name, (_, argtypes, restype) in self.functions.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, restype
            out[name] = fn
        return out


HEADER = Header.read(Path(__file__).with_name("hexa.h"))
