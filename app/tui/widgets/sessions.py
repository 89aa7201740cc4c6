"""Sessions sidebar: the sessions of one mode, most recent first (an agent episode with how it
ended)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Label, ListItem, ListView

GOOD = ("done",)
BAD = ("error", "disconnected")


def outcome_style(outcome: str) -> str:
    return "green" if outcome in GOOD else "red" if outcome in BAD else "yellow"


def outcome_mark(outcome: str) -> tuple[str, str]:
    """(mark, style) of an episode in the list: ✓ done, "stopped" by the user, … running, and ✗
    for every way of failing (its word is the item's tooltip and in the step log)."""
    if outcome in GOOD:
        return "✓", "green"
    if outcome in ("stopped", "running"):
        return ("stopped" if outcome == "stopped" else "…"), "yellow"
    return "✗", "red"


class SessionItem(ListItem):
    def __init__(self, session, outcome: str = "") -> None:
        label = Text(session.title or "Untitled")
        if outcome:       # first: the list is narrow, a long title is cut at its end
            label = Text.assemble(outcome_mark(outcome), " ", label)
        super().__init__(Label(label))
        self.session = session
        self.outcome = outcome
        if outcome:
            self.tooltip = outcome.replace("_", " ")


class SessionList(ListView):
    BORDER_TITLE = "Sessions"

    async def show(self, sessions, current_id=None, outcomes: dict | None = None) -> None:
        await self.clear()
        items = [SessionItem(s, (outcomes or {}).get(s.id, "")) for s in sessions]
        if items:
            await self.extend(items)
        for i, item in enumerate(items):
            if item.session.id == current_id:
                self.index = i
                break
