"""The memory's advanced knobs, handed to ``Memory`` as one object.

The memory reads no environment variable: the app's settings (the ``[memory]`` table of
config.toml, or the kept ``HEXA_EMBED_*`` variables) check these values and build this object.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class MemoryOptions:
    """``embed_model``: another local sentence-transformers folder instead of the bundled
    all-MiniLM-L6-v2 (None: the bundled one). ``embed_threads``: the threads an embedding is
    computed with — on the bundled model, the workers a long batch (a document's chunks) is split
    over, each with one BLAS thread (a query always runs on one); torch's (process-wide) when
    another folder loads (None: the CPU count, or torch's own); useful for one-shot processes on
    a busy CPU, where one thread beats two that wait on each other."""
    embed_model: Path | None = None
    embed_threads: int | None = None
