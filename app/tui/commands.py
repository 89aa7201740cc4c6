"""Command palette: sessions of every mode (open one), on top of the app's system commands."""
from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class SessionsProvider(Provider):
    """"Open session: <title>" for every stored session; switches to its mode."""

    def _sessions(self):
        runtime = getattr(self.app, "runtime", None)
        if runtime is None:
            return []
        specs = {s.name: s.title for s in self.app.specs}  # type: ignore[attr-defined]
        return [(f"Open {specs[s.mode]} session: {s.title}", s) for s in runtime.memory.list_sessions()
                if s.mode in specs]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, session in self._sessions():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self.app.open_session, session),  # type: ignore[attr-defined]
                          help=f"{session.mode} · {session.model}")

    async def discover(self) -> Hits:
        for title, session in self._sessions()[:10]:
            yield DiscoveryHit(title, partial(self.app.open_session, session))  # type: ignore[attr-defined]
