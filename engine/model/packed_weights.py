"""The model as the native kernel runs it, kept beside the model cache so later starts skip the
fp32 weights altogether.

Packing needs the fp32 weights (540 MB for SmolLM2-135M); the packed model is their Q4_1/Q8_0
codes (~110 MB) plus the few weights that are not codes (norms). Reading the fp32 file on every
start made the fp32 copy the peak of a process's memory (``hexa ask`` 1.45 GB resident); reading
this file instead keeps the peak near what the engine holds while it runs. One file per kernel
build (its layout is the kernel's), tied to the weights it was packed from by their hash.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

FORMAT = 3   # 3: safetensors (numpy) with a JSON index; 2 was torch.save's pickle
SLOTS = ("wqkv", "wo", "wgu", "wdown")


def path_for(folder: Path, build: str) -> Path:
    return Path(folder) / f"packed-{build}.safetensors"


def weights_hash(folder: Path) -> str:
    """The model cache's recorded hash of its fp32 weights ("" if it has none)."""
    try:
        return json.loads((Path(folder) / "manifest.json").read_text())["files"]["model.safetensors"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _pack_entry(w) -> dict:
    if w.quant is not None:
        return {"shape": list(w.shape), "bits": w.bits, "codes": w.quant}
    return {"shape": list(w.shape), "bits": 0, "data": w.data}


def save(model, folder: Path, build: str) -> Path:
    """Write ``model``'s packed weights (a CompactTransformer after ``use_native_kernel``)."""
    layers = [{"ln_in": L.ln_in, "ln_post": L.ln_post, "bqkv": L.bqkv, "q_norm": L.q_norm, "k_norm": L.k_norm,
               "post_attn": L.post_attn, "post_ffn": L.post_ffn,
               **{s: _pack_entry(getattr(L, s)) for s in SLOTS}} for L in model.layers]
    state = {"format": FORMAT, "build": build, "weights": weights_hash(folder), "layers": layers,
             "norm": model.norm, "lm_head": _pack_entry(model.lm_head),
             "tied": model.lm_head is model.embed,
             "embed": None if model.lm_head is model.embed else
             _pack_entry(model.embed) if hasattr(model.embed, "quant") else model.embed}
    from safetensors.numpy import save_file

    arrays: dict[str, np.ndarray] = {}
    index = _index(state, "", arrays)
    path = path_for(folder, build)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=path.name + ".tmp-")
    os.close(fd)
    try:
        save_file(arrays, tmp, metadata={"hexa": json.dumps(index)})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    for old in [*Path(folder).glob("packed-*.pt"), *Path(folder).glob("packed-*.safetensors")]:
        if old != path:   # layouts of earlier kernel builds, and torch.save's files of format 2
            old.unlink(missing_ok=True)
    return path


def _index(value, name: str, arrays: dict[str, np.ndarray]):
    """``value`` with every array moved into ``arrays`` under its path and replaced by
    {"array": path}: the JSON the file's metadata keeps (safetensors holds flat arrays only)."""
    if isinstance(value, np.ndarray):
        arrays[name] = np.ascontiguousarray(value)
        return {"array": name}
    if isinstance(value, dict):
        return {k: _index(v, f"{name}.{k}" if name else k, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_index(v, f"{name}.{i}", arrays) for i, v in enumerate(value)]
    return value


_DTYPES = {"U8": np.uint8, "I8": np.int8, "U16": np.uint16, "F16": np.float16, "F32": np.float32, "I32": np.int32, "I64": np.int64}


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(the JSON index, the arrays) of a file ``save`` wrote, each array read straight into its
    own buffer. Not safetensors' loaders: ``load_file`` reads the whole file into bytes and copies
    every array out of them, and ``safe_open`` maps the file, whose pages then count as resident
    beside the copies (either way Gemma-3-270M's load peaked 628 MB for 384 held)."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        base = 8 + size
        index = json.loads(header.pop("__metadata__")["hexa"])
        arrays = {}
        for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            begin, end = info["data_offsets"]
            a = np.empty(info["shape"], dtype=_DTYPES[info["dtype"]])
            if a.nbytes != end - begin:
                raise ValueError(f"{name}: {end - begin} bytes for {a.nbytes}")
            f.seek(base + begin)
            if f.readinto(memoryview(a).cast("B")) != a.nbytes:
                raise ValueError(f"{name}: the file ends early")
            arrays[name] = a
    return index, arrays


def _restore(value, arrays: dict[str, np.ndarray]):
    if isinstance(value, dict):
        if set(value) == {"array"}:
            return arrays[value["array"]]
        return {k: _restore(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v, arrays) for v in value]
    return value


def load(folder: Path, build: str) -> dict | None:
    """The packed state for this kernel build, or None if there is none or it does not belong to
    these weights (then the caller packs from fp32 and saves again)."""
    path = path_for(folder, build)
    if not path.exists():
        return None
    try:
        state = _restore(*_read(path))
    except (OSError, ValueError, KeyError, TypeError):   # truncated or foreign: repack
        return None
    if not isinstance(state, dict) or state.get("format") != FORMAT or state.get("build") != build \
            or state.get("weights") != weights_hash(folder):
        return None
    return state
