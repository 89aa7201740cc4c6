"""What the agent may not do on its own: sensitive actions wait for the user; loops stop."""
from __future__ import annotations

import re

from .actions import Action
from .screen import Element

# labels whose action spends money, loses data or reaches other people
SENSITIVE = re.compile(r"\b(pay|payment|buy|purchase|checkout|order|delete|remove|erase|send|call|"
                       r"dial|uninstall|install|reset|factory|format|block|schedule (?:message|send|text))\b", re.I)
REPEATS = 3              # the same action on the same screen this often is a loop


def confirmation_needed(action: Action, shown: list[Element]) -> str | None:
    """Why ``action`` needs the user's yes, or None."""
    if action.name not in ("tap", "long_press", "type"):
        return None
    e = shown[action.index - 1]
    if e.password:
        return f"{action} writes into a password field ({e.label})"
    words = " ".join([e.label, e.desc] + e.details[:1])
    m = SENSITIVE.search(words)
    if m:
        return f"{action} presses \"{e.label}\" ({m[0].lower()})"
    return None


def sensitive_reason(step) -> str | None:
    """Why a planner's step (``planner.Step``) needs the user's yes, or None."""
    e = step.element
    if e is None or step.action not in ("tap", "long_press", "type"):
        return None
    if e.password:
        return f"typing into a password field ({e.label})"
    words = " ".join([e.label, e.desc] + e.details[:1])
    m = SENSITIVE.search(words)
    if m and step.action != "type":
        return f"{step.action} \"{e.label}\" ({m[0].lower()})"
    return None


class LoopGuard:
    """Two ways a small model runs away: the same action on an unchanged screen again and again
    (it does nothing the model can see), and flipping the switch it has just flipped (each flip
    undoes the last: a model that does not see it is done would toggle until the step limit,
    leaving the switch wherever the limit falls)."""

    def __init__(self, repeats: int = REPEATS):
        self.repeats = repeats
        self.seen: dict[tuple[str, str], int] = {}
        self.last: tuple[str, str, bool] | None = None   # (screen title, element, was a switch)

    def looping(self, signature: str, action: Action) -> bool:
        key = (signature, str(action))
        self.seen[key] = self.seen.get(key, 0) + 1
        return self.seen[key] >= self.repeats

    def undoes(self, title: str, action: Action, shown: list[Element]) -> bool:
        """Whether ``action`` flips again the switch the previous action flipped; remembers it."""
        target = shown[action.index - 1] if action.name == "tap" and action.index else None
        now = (title, target.label, target.checkable) if target is not None else None
        undo = now is not None and now[2] and self.last == now
        self.last = now
        return undo
