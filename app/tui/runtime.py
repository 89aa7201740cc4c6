"""What the screens talk to once loaded: the engine (one generation at a time), the memory and
the agents over them. If the memory in the data folder cannot be opened, chat still works on a
temporary one, and the app says so."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from agents.assistant import Assistant
from agents.summarizer import Summarizer
from app.loading import load_engine, open_memory, open_temporary_memory

from .jobs import OneAtATime

EngineFactory = Callable[[Any, Any, Callable[[str], None]], Any]   # (settings, locations, progress)
MemoryFactory = Callable[[Any, Any], Any]                          # (locations, engine)


def app_engine(settings, locs, progress: Callable[[str], None]):
    """The app's engine as the settings say: a running server's, a child process's, or in process."""
    if settings.engine_url:
        import os

        from app.serve.client import RemoteEngine

        return RemoteEngine(settings.engine_url, os.environ.get(settings.serve_api_key_env) or None)
    if settings.engine_process == "child":
        from app.serve.child import start

        return start(settings, progress)
    return load_engine(settings, locs, progress)


def default_memory(locs, engine, settings=None):
    """The memory in the data folder, with ``settings``' [memory] options (HexaApp passes them)."""
    return open_memory(locs, tokenizer=engine.encode, settings=settings)


@dataclass
class Runtime:
    engine: Any
    memory: Any
    settings: Any
    memory_problem: str = ""               # why the memory is a temporary one this run
    temporary: Path | None = None          # its folder, removed on close
    agents: dict = field(default_factory=dict)
    data_dir: Path | None = None           # where routing keeps its fits (None: no routing)

    def __post_init__(self) -> None:
        from ..routing import build_router

        router, note = build_router(self.engine, self.settings, self.data_dir) if self.data_dir else (None, "")
        self.agents = {"assistant": Assistant(self.engine, self.memory, self.settings, router, note),
                       "summarizer": Summarizer(self.engine, self.memory, self.settings, router=router)}

    def update_settings(self, settings) -> None:
        from ..routing import build_router

        self.settings = settings
        for agent in self.agents.values():
            agent.settings = settings
        if self.data_dir:
            assistant = self.agents["assistant"]
            assistant.router, assistant.router_note = build_router(self.engine, settings, self.data_dir)
            self.agents["summarizer"].router = assistant.router

    def close(self) -> None:
        try:
            close_engine(self.engine)
            self.memory.close()
        finally:
            if self.temporary is not None:
                shutil.rmtree(self.temporary, ignore_errors=True)


def build_runtime(settings, locs, progress: Callable[[str], None], engine_factory: EngineFactory,
                  memory_factory: MemoryFactory, previous: Runtime | None = None,
                  fallback_memory: Callable = open_temporary_memory) -> Runtime:
    """Load the engine, then open the memory (on a reload, the previous runtime's memory is kept
    and counts tokens with the new model)."""
    from memory import StoreError

    if previous is not None:      # a child engine process goes before the next one starts
        close_engine(previous.engine)
    engine = OneAtATime(engine_factory(settings, locs, progress))
    if previous is not None:
        previous.memory.tokenizer = engine.encode
        return Runtime(engine, previous.memory, settings, previous.memory_problem, previous.temporary,
                       data_dir=locs.data)
    try:
        return Runtime(engine, memory_factory(locs, engine), settings, data_dir=locs.data)
    except StoreError as exc:
        temporary, folder = fallback_memory(tokenizer=engine.encode)
        return Runtime(engine, temporary, settings, memory_problem=str(exc), temporary=folder,
                       data_dir=locs.data)


def close_engine(engine) -> None:
    close = getattr(engine, "close", None)    # an engine in another process: stop it or disconnect
    if close is not None:
        close()


__all__ = ["Runtime", "app_engine", "build_runtime", "default_memory", "load_engine", "open_temporary_memory"]
