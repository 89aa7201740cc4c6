"""hexa's inference engine: model loading, the compact transformer, decoding, events, benchmark.

``threads`` is imported first on purpose: it sets OpenMP's wait policy before torch loads.
"""
from . import threads as _threads  # noqa: F401  (must precede any torch import)
from .engine import BACKENDS, METHODS, Engine
from .errors import EngineError
from .events import Done, Event, Notice, Prefill, Step, Text

__all__ = ["BACKENDS", "METHODS", "Engine", "EngineError", "Done", "Event", "Notice", "Prefill", "Step", "Text"]
