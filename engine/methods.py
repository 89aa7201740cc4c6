"""Decoding methods and runtime backends: the one list every part of hexa offers (no torch here).

``vanilla`` drafts nothing. ``sam`` is the SAM-Decoding baseline (suffix automata over the prompt +
generated text and over history, one linear draft). ``hexa`` is everything: context, history,
calibrated and reused drafts merged into one tree whose size follows the backend's measured cost
curve. ``hexa-no*`` drop one technique each, for ablations. ``hexa-fill`` drafts like ``hexa`` but
fills a fixed 32-token tree every step, as on an NPU whose verification graph costs the same
however full it is: it measures drafting quality at a budget where sam's linear draft has as much
room (a CPU pays for every token, so it is slower there).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import EngineError


@dataclass(frozen=True)
class MethodSpec:
    """How a speculative method drafts (plain decoding has no spec)."""
    mode: str = "tree"            # "tree" | "linear"
    context: bool = True
    history: bool = True
    calibration: bool = True
    reuse: bool = True
    fill: int = 0                 # >0: every tree fills this many drafts; 0: sized by the cost curve
    branches: int = 4             # continuations taken per suffix-automaton match


# name, one line for the CLI help and the settings screen, spec (None: plain decoding)
_METHODS: tuple[tuple[str, str, MethodSpec | None], ...] = (
    ("vanilla", "one token per forward pass", None),
    ("sam", "suffix automata over the prompt, generated text and past responses (SAM-Decoding), "
            "linear drafts", MethodSpec(mode="linear", calibration=False, reuse=False)),
    ("hexa", "sam's sources + in-context calibration + draft reuse, trees sized by the measured "
             "cost curve", MethodSpec()),
    ("hexa-fill", "hexa's drafting filling a fixed 32-token tree, as a static NPU graph would",
     MethodSpec(fill=32, branches=8)),
    ("hexa-nocal", "hexa without calibration (ablation)", MethodSpec(calibration=False)),
    ("hexa-noreuse", "hexa without draft reuse (ablation)", MethodSpec(reuse=False)),
    ("hexa-nohist", "hexa without history drafting (ablation)", MethodSpec(history=False)),
)
METHOD_HELP: dict[str, str] = {name: text for name, text, _ in _METHODS}
METHOD_SPECS: dict[str, MethodSpec | None] = {name: spec for name, _, spec in _METHODS}
METHODS: tuple[str, ...] = tuple(METHOD_HELP)
DEFAULT_METHOD = "hexa"

# name, one line of help, default context window in tokens
_BACKENDS: tuple[tuple[str, str, int], ...] = (
    # KV capacity unless the model allows less; keeps memory modest on phones
    ("torch", "CPU, hexa's native kernels", 4096),
    # the qnn graphs' static context: attention always spans all of it
    ("qnn", "static graphs on the Hexagon NPU (QNN HTP)", 1024),
)
BACKEND_HELP: dict[str, str] = {name: text for name, text, _ in _BACKENDS}
DEFAULT_CONTEXT: dict[str, int] = {name: window for name, _, window in _BACKENDS}
BACKENDS: tuple[str, ...] = tuple(BACKEND_HELP)
DEFAULT_BACKEND = "torch"


def method_spec(name: str) -> MethodSpec | None:
    """The spec of a method (None for plain decoding); an ``EngineError`` for an unknown name."""
    if name not in METHOD_SPECS:
        raise EngineError(f"unknown decoding method {name!r} (available: {', '.join(METHODS)})")
    return METHOD_SPECS[name]


def check_backend(name: str) -> str:
    if name not in BACKENDS:
        raise EngineError(f"unknown backend {name!r} (available: {', '.join(BACKENDS)})")
    return name
