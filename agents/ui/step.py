"""A candidate next step, as the planner proposes it and the agent performs it, and the words
that mark what a button does (confirm, cancel, create, remove)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .exploring import NEGATIVE, POSITIVE
from .goals import CREATE, Goal, effect_text
from .graph import AppGraph, UIEdge, element_key
from .screen import Element

__all__ = ["CREATE", "NEGATIVE", "POSITIVE", "REMOVE", "SELECTING", "Step", "effect_line"]

REMOVE = re.compile(r"\b(remove|delete|dismiss|take .+ off)\b", re.I)


# a list in selection mode ("Select languages to remove", "2 selected"): items are checked, then acted on
SELECTING = re.compile(r"^select\b|\bselected$|^\d+ selected", re.I)


@dataclass
class Step:
    action: str                    # tap, long_press, type, swipe, back, done
    element: Element | None = None
    text: str = ""                 # type: what to write; swipe: the direction; done: the answer
    slot: int | None = None        # the slot it uses up
    edge: UIEdge | None = None     # the known edge it follows
    goal: Goal | None = None
    expect: int | None = None      # the screen it should lead to (None: this one / unknown)
    why: str = ""                  # its consequence, for the model and the log
    score: float = 0.0
    finishes: bool = False         # acting on the goal itself

    def key(self) -> tuple:
        return (self.action, element_key(self.element) if self.element else "", self.text)



def effect_line(g: AppGraph, edge: UIEdge | None) -> str:
    return effect_text(g, edge) if edge is not None else ""
