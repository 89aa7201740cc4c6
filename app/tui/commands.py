"""Command palette entries read from memory: open a session of any mode, forget a document.
Providers search asynchronously, so the memory is read on a thread, never on the UI thread."""
from __future__ import annotations

import asyncio
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class SessionsProvider(Provider):
    """"Open session: <title>" for every stored session; switches to its mode."""

    async def _sessions(self):
        runtime = getattr(self.app, "runtime", None)
        if runtime is None:
            return []
        specs = {s.name: s.title for s in self.app.specs}  # type: ignore[attr-defined]
        sessions = await asyncio.to_thread(runtime.memory.list_sessions)
        return [(f"Open {specs[s.mode]} session: {s.title}", s) for s in sessions if s.mode in specs]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, session in await self._sessions():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self.app.open_session, session),  # type: ignore[attr-defined]
                          help=f"{session.mode} · {session.model}")

    async def discover(self) -> Hits:
        for title, session in (await self._sessions())[:10]:
            yield DiscoveryHit(title, partial(self.app.open_session, session))  # type: ignore[attr-defined]


class DocumentsProvider(Provider):
    """"Forget document: <name>" for every stored document (asks first)."""

    async def search(self, query: str) -> Hits:
        runtime = getattr(self.app, "runtime", None)
        if runtime is None:
            return
        matcher = self.matcher(query)
        for doc in await asyncio.to_thread(runtime.memory.list_documents):
            title = f"Forget document: {doc.name}"
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self.forget, doc),
                          help=f"{doc.chunks} chunks · {doc.path}")

    def forget(self, doc) -> None:
        from .screens.dialogs import ConfirmDialog

        async def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                await asyncio.to_thread(self.app.runtime.memory.delete_document, doc.id)  # type: ignore[attr-defined]
            except Exception as exc:
                self.app.notify(f"{doc.name}: {exc}", severity="error")
                return
            self.app.notify(f"Forgot {doc.name}: it is no longer retrieved or summarized.")
        self.app.push_screen(ConfirmDialog(f"Forget “{doc.name}” ({doc.chunks} chunks)?", ok="Forget"),
                             answered)
