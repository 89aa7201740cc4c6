"""Building the engine and opening the memory from the settings: the one place every entry point
(the TUI, ``hexa ask``, ``hexa bench``) gets them from."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable

from .locations import Locations, ensure
from .settings import Settings, engine_options, memory_options

Progress = Callable[[str], None]


def load_engine(settings: Settings, locs: Locations, progress: Progress | None = None):
    from engine.model.source import resolve

    resolve(settings.model)   # a model hexa cannot run is refused from its header before torch loads
    from engine import Engine

    from .model_catalog import remember

    engine = Engine.load(settings.model, cache_dir=ensure(locs.cache), backend=settings.backend,
                         threads=settings.threads, context_window=settings.context, progress=progress,
                         soc=settings.soc, cost_profile=settings.cost_profile,
                         options=engine_options(settings))
    remember(locs, settings.model)            # offered again by `hexa models` and Settings (F8)
    return engine


def open_memory(locs: Locations, tokenizer: Callable[[str], list[int]] | None = None,
                settings: Settings | None = None, **kw):
    """The memory in the data folder (raises ``memory.StoreError`` with a one-line reason).
    ``settings``: whose [memory] options it gets (None: the defaults)."""
    from memory import Memory

    if settings is not None:
        kw.setdefault("options", memory_options(settings))
    return Memory.open(locs.data, tokenizer=tokenizer, **kw)


def open_temporary_memory(tokenizer: Callable[[str], list[int]] | None = None,
                          settings: Settings | None = None, **kw):
    """(memory, folder): a memory in a temporary folder, for a run whose data folder cannot be
    used. Chat keeps working (sessions, retrieval within this run); the caller removes ``folder``
    when it quits, so nothing is kept."""
    from memory import Memory

    if settings is not None:
        kw.setdefault("options", memory_options(settings))
    folder = Path(tempfile.mkdtemp(prefix="hexa-memory-"))
    try:
        return Memory.open(folder, tokenizer=tokenizer, **kw), folder
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise
