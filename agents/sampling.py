"""Per-mode repetition penalties and sampling truncation, with the user's settings on top.

The defaults come from measurement (docs/sampling.md): the share of dev-set summaries holding a
repeated 8-word sequence, and the speed of speculative decoding under each choice. The UI agent
gets none: its output is constrained JSON naming elements by id, where repeating a token is often
the right answer, and the constraint already keeps it from looping.
"""
from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from engine.decoding.penalties import Penalties

# llama.cpp's "off": every knob at its neutral value
OFF = Penalties()
MODE_PENALTIES: dict[str, Penalties] = {
    "assistant": Penalties(dry_multiplier=0.8, penalize_prompt=False),
    "summarizer": Penalties(dry_multiplier=0.8, penalize_prompt=False),
    "ui": OFF,
}
MODE_TRUNCATION: dict[str, tuple[int, float]] = {    # (top_k, min_p): only when sampling
    "assistant": (40, 0.05),
    "summarizer": (40, 0.05),
    "ui": (0, 0.0),
}
_KNOBS = tuple(f.name for f in fields(Penalties) if f.name != "dry_breakers")


def generation_options(settings: Any, mode: str) -> dict[str, Any]:
    """``Engine.generate`` keyword arguments for a mode: its defaults, with every knob the user
    set (``settings``: an ``app.settings.Settings``-like object, None meaning unset) on top.
    The UI agent ignores the user's knobs too (see the module's doc)."""
    if mode == "ui":
        return {"penalties": None, "top_k": 0, "min_p": 0.0}
    base = MODE_PENALTIES.get(mode, OFF)
    given = {k: getattr(settings, k) for k in _KNOBS if getattr(settings, k, None) is not None}
    top_k, min_p = MODE_TRUNCATION.get(mode, (0, 0.0))
    if getattr(settings, "top_k", None) is not None:
        top_k = settings.top_k
    if getattr(settings, "min_p", None) is not None:
        min_p = settings.min_p
    pen = replace(base, **given)
    return {"penalties": pen if pen.active else None, "top_k": top_k, "min_p": min_p}
