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

    def __post_init__(self) -> None:
        self.agents = {"assistant": Assistant(self.engine, self.memory, self.settings),
                       "summarizer": Summarizer(self.engine, self.memory, self.settings)}

    def update_settings(self, settings) -> None:
        self.settings = settings
        for agent in self.agents.values():
            agent.settings = settings

    def close(self) -> None:
        try:
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

    engine = OneAtATime(engine_factory(settings, locs, progress))
    if previous is not None:
        previous.memory.tokenizer = engine.encode
        return Runtime(engine, previous.memory, settings, previous.memory_problem, previous.temporary)
    try:
        return Runtime(engine, memory_factory(locs, engine), settings)
    except StoreError as exc:
        temporary, folder = fallback_memory(tokenizer=engine.encode)
        return Runtime(engine, temporary, settings, memory_problem=str(exc), temporary=folder)


__all__ = ["Runtime", "build_runtime", "default_memory", "load_engine", "open_temporary_memory"]
