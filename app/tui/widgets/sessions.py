"""Sessions sidebar: the sessions of one mode, most recent first."""
from __future__ import annotations

from textual.widgets import Label, ListItem, ListView


class SessionItem(ListItem):
    def __init__(self, session) -> None:
        super().__init__(Label(session.title or "Untitled"))
        self.session = session


class SessionList(ListView):
    BORDER_TITLE = "Sessions"

    async def show(self, sessions, current_id=None) -> None:
        await self.clear()
        items = [SessionItem(s) for s in sessions]
        if items:
            await self.extend(items)
        for i, item in enumerate(items):
            if item.session.id == current_id:
                self.index = i
                break
