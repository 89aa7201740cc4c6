"""Convert a model source once into a cache folder the engine loads quickly.

Cache entry layout (``<cache>/models/<name>-<fingerprint>/``): ``config.json``, ``model.safetensors``
(fp32), tokenizer files, and ``manifest.json`` written last with each file's size and SHA-256.
An entry without a manifest (half-written) or whose files don't match it (corrupt) is rebuilt.
A file whose size and modification time still equal the manifest's is trusted without rehashing
(hashing 0.5 GB on every start would cost a second); any rewrite changes the time and is rehashed.
Writes go to a temporary sibling folder that is renamed into place, so a crash never leaves a
half entry under the final name.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from ..errors import EngineError
from ..files import atomic_write
from .source import ModelSource, check_architecture

MANIFEST = "manifest.json"
WEIGHTS = "model.safetensors"
FORMAT_VERSION = 1

Progress = Callable[[str], None]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def entry_dir(source: ModelSource, cache_root: Path) -> Path:
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in source.name)
    return cache_root / f"{safe}-{source.fingerprint()}"


def is_valid(entry: Path, deep: bool = False) -> bool:
    """True only if the manifest exists and every file matches its size and hash.

    ``deep=False`` skips the hash of files whose size and mtime are unchanged since it was checked.
    """
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        if manifest.get("format") != FORMAT_VERSION:
            return False
        rehashed = False
        for name, meta in manifest["files"].items():
            st = (entry / name).stat()
            if st.st_size != meta["size"]:
                return False
            if deep or st.st_mtime_ns != meta.get("mtime_ns"):
                if _sha256(entry / name) != meta["sha256"]:
                    return False
                meta["mtime_ns"] = st.st_mtime_ns
                rehashed = True
        if rehashed:  # e.g. a copied cache: remember the new times so the next start is fast
            atomic_write(entry / MANIFEST, json.dumps(manifest, indent=1))
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def ensure_cached(source: ModelSource, cache_root: Path, progress: Progress | None = None) -> Path:
    """Return a valid cache entry for ``source``, converting (or rebuilding) it if needed."""
    say = progress or (lambda _msg: None)
    entry = entry_dir(source, cache_root)
    if entry.exists():
        say("checking model cache")
        if is_valid(entry):
            return entry
        say("model cache is incomplete or corrupt: rebuilding it")
        shutil.rmtree(entry, ignore_errors=True)
    if source.kind == "gguf":   # refuse an architecture before a long conversion, in one line
        from .gguf_header import check_architecture
        from .source import SUPPORTED_ARCHITECTURES
        check_architecture(source.path, source.name, SUPPORTED_ARCHITECTURES)
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=entry.name + ".tmp-", dir=cache_root))
    try:
        _convert(source, tmp, say)
        _write_manifest(tmp)
        os.replace(tmp, entry)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry


def _write_manifest(folder: Path) -> None:
    files = {f.name: {"size": f.stat().st_size, "sha256": _sha256(f), "mtime_ns": f.stat().st_mtime_ns}
             for f in sorted(folder.iterdir()) if f.is_file()}
    data = json.dumps({"format": FORMAT_VERSION, "files": files}, indent=1)
    (folder / MANIFEST).write_text(data)


def _download(source: ModelSource, say: Progress) -> Path:
    say(f"downloading {source.hub_id}")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source.hub_id, etag_timeout=5,
                                      allow_patterns=["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja"]))
    except Exception as exc:  # network, auth, missing repo: all user-fixable
        raise EngineError(f"cannot fetch model {source.hub_id!r} from the hub (offline or unknown id: "
                          f"{exc.__class__.__name__}); pass a local folder or .gguf file with --model") from None


def _convert(source: ModelSource, out: Path, say: Progress) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if source.kind == "hub":
        folder, kwargs = _download(source, say), {}
    elif source.kind == "gguf":
        folder, kwargs = source.path.parent, {"gguf_file": source.path.name}
    else:
        folder, kwargs = source.path, {}
    say(f"converting {source.name} (first run only)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs)
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(f"{source.name}: cannot load model ({exc.__class__.__name__}: "
                          f"{str(exc).splitlines()[0][:160] if str(exc) else 'no detail'})") from None
    check_architecture(model.config.model_type, source.name)
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["hexa_name"] = source.name
    state = {k: v.detach().to(torch.float32).contiguous() for k, v in model.state_dict().items()}
    if config.get("tie_word_embeddings"):
        state.pop("lm_head.weight", None)
    save_file(state, str(out / WEIGHTS))
    (out / "config.json").write_text(json.dumps(config, indent=1, default=str))
    tokenizer.save_pretrained(out)
