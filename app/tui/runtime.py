"""What the screens talk to once loaded: engine, memory and the agents over them."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from agents.assistant import Assistant
from agents.summarizer import Summarizer

EngineFactory = Callable[[Any, Any, Callable[[str], None]], Any]   # (settings, locations, progress)
MemoryFactory = Callable[[Any, Any], Any]                          # (locations, engine)


def load_engine(settings, locs, progress: Callable[[str], None]):
    from app.locations import ensure
    from engine import Engine
    return Engine.load(settings.model, cache_dir=ensure(locs.model_cache), backend=settings.backend,
                       threads=settings.threads, context_window=settings.context, progress=progress)


def open_memory(locs, engine):
    from app.locations import ensure
    from memory import Memory
    return Memory.open(ensure(locs.data), tokenizer=engine.encode)


@dataclass
class Runtime:
    engine: Any
    memory: Any
    settings: Any

    def __post_init__(self) -> None:
        self.lock = threading.Lock()          # one generation at a time on the engine
        self.agents = {"assistant": Assistant(self.engine, self.memory, self.settings),
                       "summarizer": Summarizer(self.engine, self.memory, self.settings)}

    def update_settings(self, settings) -> None:
        self.settings = settings
        for agent in self.agents.values():
            agent.settings = settings
