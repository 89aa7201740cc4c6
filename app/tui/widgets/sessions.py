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
    shown: list = []          # (id, title, outcome) of the items drawn

    async def show(self, sessions, current_id=None, outcomes: dict | None = None) -> None:
        """Draw ``sessions``; the items are built again only when one of them changed (a message
        sent in the session on top changes nothing here, and building the list lays the screen
        out twice: while the answer starts to stream, measured)."""
        shown = [(s.id, s.title, (outcomes or {}).get(s.id, "")) for s in sessions]
        if shown != self.shown:
            await self.clear()
            if not self.is_attached:   # the app quit while the list was read (Ctrl+Q: a traceback, exit 1)
                return
            if sessions:
                await self.extend([SessionItem(s, outcome) for s, (_, _, outcome) in zip(sessions, shown)])
            self.shown = shown
        else:
            for item, session in zip(self.query(SessionItem), sessions):
                item.session = session      # the same sessions: their other fields kept fresh
        for i, item in enumerate(self.query(SessionItem)):
            if item.session.id == current_id:
                self.index = i
                break
