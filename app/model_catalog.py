"""The models on this machine, for ``hexa models`` and the settings screen's picker (as ollama's
and oterm's lists): the embedded default, the GGUFs and model folders in the data folder's
``models`` folder, the Hugging Face hub cache and hexa's own cache of converted models, and the
paths the user loaded before (remembered in ``models.json`` in the data folder). Each with its
size, architecture and quantization read from its header or config.json (never its weights), and
whether hexa can run it."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .locations import Locations

REMEMBERED = "models.json"
KEEP = 50                  # paths remembered (the most recent first)


@dataclass(frozen=True)
class FoundModel:
    path: str              # what to give as --model ("" for the embedded default)
    name: str
    kind: str              # "gguf" | "folder"
    where: str             # "embedded" | "data" | "hf-cache" | "converted" | "used before"
    size_mb: float
    architecture: str
    quant: str
    supported: bool
    problem: str = ""      # why it cannot be used, one line

    def as_dict(self) -> dict:
        return asdict(self)


def _size(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def describe(path: Path, where: str, label: str | None = None) -> FoundModel | None:
    """One model file or folder, from its header or config.json; None if it is neither."""
    from engine.errors import EngineError
    from engine.model.gguf_header import ARCHITECTURES, FILE_TYPES, header, header_value
    from engine.model.source import SUPPORTED_ARCHITECTURES

    path = Path(path)
    shown = "" if where == "embedded" else str(path)
    try:
        if path.is_file() and path.suffix.lower() == ".gguf":
            values = header(path)
            arch = str(values.get("general.architecture", "?"))
            kind = values.get("general.file_type")
            if kind is None:   # llama.cpp's quantizer writes it last, past the vocabulary (0.17 s for 262k tokens)
                kind = header_value(path, "general.file_type")
            quant = FILE_TYPES.get(kind, f"type {kind}") if kind is not None else "?"
            ok = arch in ARCHITECTURES
            return FoundModel(shown, label or path.stem, "gguf", where, _size(path), arch, quant, ok,
                              "" if ok else f"architecture {arch!r} is not supported")
        if path.is_dir() and (path / "config.json").is_file():
            config = json.loads((path / "config.json").read_text())
            arch = str(config.get("model_type", "?"))
            ok = arch in SUPPORTED_ARCHITECTURES
            return FoundModel(shown, label or path.name, "folder", where, _size(path), arch,
                              str(config.get("torch_dtype") or "fp32"), ok,
                              "" if ok else f"architecture {arch!r} is not supported")
    except (EngineError, OSError, ValueError) as exc:
        return FoundModel(shown, label or path.name, "gguf" if path.suffix == ".gguf" else "folder", where,
                          0.0, "?", "?", False, str(exc).splitlines()[0] if str(exc) else "unreadable")
    return None


def _hf_cache() -> Path | None:
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    return Path(constants.HF_HUB_CACHE)


def _candidates(root: Path, depth: int = 3):
    """GGUF files and folders with a config.json under ``root`` (not inside a model folder)."""
    if not root.is_dir():
        return
    stack = [(root, 0)]
    while stack:
        folder, level = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_file() and entry.suffix.lower() == ".gguf":
                yield entry
            elif entry.is_dir():
                if (entry / "config.json").is_file():
                    yield entry
                elif level < depth:
                    stack.append((entry, level + 1))


def remembered(locs: Locations) -> list[str]:
    try:
        paths = json.loads((locs.data / REMEMBERED).read_text())
        return [p for p in paths if isinstance(p, str)]
    except (OSError, ValueError):
        return []


def remember(locs: Locations, model: str | None) -> None:
    """Keep a model path the user loaded (a hub id or the default is not a path to remember)."""
    if not model or not Path(model).expanduser().exists():
        return
    path = str(Path(model).expanduser().resolve())
    paths = [path] + [p for p in remembered(locs) if p != path]
    try:
        locs.data.mkdir(parents=True, exist_ok=True)
        tmp = locs.data / (REMEMBERED + ".tmp")
        tmp.write_text(json.dumps(paths[:KEEP], indent=1))
        tmp.replace(locs.data / REMEMBERED)
    except OSError:
        pass          # a list of conveniences: never a reason to fail a load


def find_models(locs: Locations) -> list[FoundModel]:
    """Every model found, the embedded default first; each path once."""
    from engine.model.source import embedded_gguf

    found: list[FoundModel] = []
    seen: set[Path] = set()

    def add(path: Path, where: str, label: str | None = None) -> None:
        key = path.resolve()
        if key in seen:
            return
        seen.add(key)
        model = describe(path, where, label)
        if model is not None:
            found.append(model)

    try:
        add(embedded_gguf(), "embedded", "SmolLM2-135M-Instruct (default)")
    except Exception:
        pass
    for path in _candidates(locs.data / "models"):
        add(path, "data")
    for text in remembered(locs):
        if Path(text).exists():
            add(Path(text), "used before")
    hub = _hf_cache()
    if hub is not None:
        for path in _candidates(hub, depth=4):
            add(path, "hf-cache")
    for path in _candidates(locs.model_cache, depth=0):
        if (path / "model.safetensors").is_file():         # a converted folder; GGUF entries hold no weights
            add(path, "converted")
    return found
