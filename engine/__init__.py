"""hexa's inference engine. Its rooms: ``model/`` (the file, cache, weights, tokenizer), ``runtime/``
(the forward pass: torch, native kernels, QNN), ``decoding/`` (the generation loop, speculation,
sampling, constraints), ``routing/`` (device and servers), ``bench/`` (every benchmark harness).
Here at the top: the facade (``engine.Engine``), its events, errors, methods and options.

``threads`` is imported first on purpose: it sets OpenMP's wait policy before torch loads. The
names below that need torch (``Engine``, ``Grammar``, ``Free``) are imported on first use, so that ``engine.methods``,
``engine.events`` and ``engine.errors`` stay light (the CLI's argument parsing and the settings
read them without loading torch).
"""
from . import threads as _threads  # noqa: F401  (must precede any torch import)
from .errors import EngineError
from .events import Done, Event, Notice, Prefill, Step, Text
from .methods import BACKENDS, DEFAULT_METHOD, METHODS

__all__ = ["BACKENDS", "DEFAULT_METHOD", "METHODS", "Engine", "EngineError", "Done", "Event", "Free", "Grammar",
           "Notice", "Prefill", "Step", "Text"]


def __getattr__(name: str):
    if name == "Engine":
        from .engine import Engine

        return Engine
    if name in ("Grammar", "Free"):          # constrained decoding (engine.decoding.grammar)
        from .decoding import grammar

        return getattr(grammar, name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
