"""What every mode screen shares: mode bar, sessions, transcript, live panels and requests.

A request is a job on a worker thread (``jobs.pump``); its events wait in the screen's inbox and
are drawn once per frame (``drain``). Memory is only touched from threads (``mem``), never on the
UI thread: a write can wait on SQLite's lock or on a document being embedded.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Iterator

from textual import events
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from agents.common import stats_of
from agents.events import Saved
from engine.events import Done, Notice, Prefill, Step, Text, now

from ..jobs import FRAME_S, PANELS_S, Finished, Inbox, Job, one_line, pump
from ..keys import bind
from ..messages import RuntimeReady
from ..metrics import RequestMetrics
from ..widgets.panels import Panels
from ..widgets.sessions import SessionList
from ..widgets.stream_tail import StreamTail
from ..widgets.transcript import MessageView, Transcript
from .session_actions import MemoryCallFailed, SessionActions


class ModeBar(Static):
    """Mode tabs (from the app's mode registry) and the load status."""

    def render_bar(self, current: str, status: str) -> None:
        tabs = []
        for spec in self.app.specs:  # type: ignore[attr-defined]
            key = self.app.key_label(spec.binding_id)  # type: ignore[attr-defined]
            style = "reverse b" if spec.name == current else "dim"
            tabs.append(f"[{style}] {key} {spec.title} [/]")
        self.update(" [b]hexa[/b]  " + " ".join(tabs) + (f"   {status}" if status else ""))


class ModeScreen(SessionActions, Screen):
    MODE = ""
    NARROW = 110      # below this many columns the sessions list starts hidden (Ctrl+B shows it)
    TIGHT = 100       # below this many columns the live panels start hidden (F9 shows them)
    CONTINUES = True  # F5 continues a response cut at the token limit
    BINDINGS = [
        bind("chat.cancel", "cancel", priority=True),
        bind("session.new", "new_session"),
        # priority: the composer (TextArea) and Inputs bind F6, F7 and Ctrl+E themselves
        bind("session.rename", "rename_session", show=False, priority=True),
        bind("session.delete", "delete_session", show=False, priority=True),
        bind("session.system", "system_prompt", show=False),
        bind("session.export", "export_session", show=False, priority=True),
        bind("sessions.toggle", "toggle_sessions", show=False),
        bind("panels.toggle", "toggle_panels", show=False, priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.session_id = None
        self.request = 0
        self.active: int | None = None          # request whose events are rendered
        self.jobs: dict[int, Job] = {}          # requests whose thread has not finished
        self.views: dict[int, MessageView] = {}
        self.inbox = Inbox()
        self.metrics = RequestMetrics()
        # a request typed while the screen could not take it (the model loading, a stopped job
        # still ending): run when it can
        self.deferred: Callable[[], Awaitable[None]] | None = None
        self._dirty = False
        self._sessions_stale = False    # a request saved a message: the list is refreshed at its end
        self._panels_t = 0.0
        self._frames = None

    # -- layout -------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ModeBar(id="modebar")
        with Horizontal(id="body"):
            yield SessionList(id="sessions")
            with Vertical(id="main"):
                transcript = Transcript(id="transcript")
                transcript.continues = self.CONTINUES
                yield transcript
                yield StreamTail(id="live")
                yield from self.compose_input()
            yield Panels(id="panels")
        yield Footer()

    def compose_input(self) -> ComposeResult:
        return iter(())

    def focus_input(self) -> None:
        pass

    @property
    def runtime(self):
        return self.app.runtime  # type: ignore[attr-defined]

    @property
    def memory(self):
        return self.runtime.memory

    @property
    def agent(self):
        return self.runtime.agents[self.MODE]

    async def on_mount(self) -> None:
        self.app.mode_screens.append(self)  # type: ignore[attr-defined]
        self._frames = self.set_interval(FRAME_S, self.drain, pause=True)
        self.refresh_bar()
        self.show_panels()
        self.focus_input()
        if self.runtime is not None:
            await self.on_runtime_ready(RuntimeReady())

    def on_unmount(self) -> None:
        if self in self.app.mode_screens:  # type: ignore[attr-defined]
            self.app.mode_screens.remove(self)  # type: ignore[attr-defined]

    def on_resize(self, event: events.Resize) -> None:
        """Sidebars start hidden in narrow terminals; decided on crossing, so Ctrl+B/F9 choices stick."""
        for cls, limit, widget in (("narrow", self.NARROW, SessionList), ("tight", self.TIGHT, Panels)):
            small = event.size.width < limit
            if small != self.has_class(cls):
                self.set_class(small, cls)
                self.query_one(widget).display = not small

    def on_screen_resume(self) -> None:
        self.refresh_bar()
        self.show_panels()

    def refresh_bar(self) -> None:
        self.query_one(ModeBar).render_bar(self.MODE, self.app.status)  # type: ignore[attr-defined]

    def show_panels(self) -> None:
        self.query_one(Panels).show(self.metrics, self.app.device)  # type: ignore[attr-defined]
        self._dirty = False
        self._panels_t = now()

    def action_toggle_panels(self) -> None:
        panels = self.query_one(Panels)
        panels.display = not panels.display

    def ready(self, retry: Callable[[], Awaitable[None]] | None = None) -> bool:
        """True once the model is loaded. While it loads, ``retry`` is kept and run when it is ready,
        so what the user typed is never dropped."""
        if self.runtime is None:
            error = self.app.load_error  # type: ignore[attr-defined]
            if error:
                self.notify(f"The model is not loaded ({error}): choose another one in Settings (F8).",
                            severity="error")
            elif retry is not None:
                self.deferred = retry
                self.notify("The model is still loading: this will be sent when it is ready.")
            else:
                self.notify("The model is still loading…", severity="warning")
            return False
        return True

    async def mem(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a memory call on a thread; on failure tell the user and raise MemoryCallFailed."""
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except Exception as exc:
            self.notify(one_line(exc), title="Memory", severity="error", timeout=8)
            raise MemoryCallFailed from exc

    async def on_runtime_ready(self, _: RuntimeReady) -> None:
        self.refresh_bar()
        self.show_panels()
        try:
            sessions = await self.mem(self.memory.list_sessions, mode=self.MODE)
            if self.session_id is None and sessions:
                await self.open_session(sessions[0].id)
            else:
                await self.refresh_sessions()
        except MemoryCallFailed:
            pass
        await self.run_deferred()

    async def run_deferred(self) -> None:
        if self.deferred is not None:
            deferred, self.deferred = self.deferred, None
            await deferred()

    # -- requests -----------------------------------------------------------------------------------
    def start(self, events_of: Callable[[Job], Iterator], view: MessageView | None) -> Job:
        """Run an agent's event generator on a worker thread; its events are drawn frame by frame."""
        self.request += 1
        job = Job(self.request)
        self.active = job.rid
        self.jobs[job.rid] = job
        if view is not None:
            self.views[job.rid] = view
        self.metrics.reset()
        self.show_panels()
        self.app.job_threads.submit(pump, job, events_of, self.inbox)  # type: ignore[attr-defined]
        self._frames.resume()
        return job

    @property
    def busy(self) -> bool:
        return self.active is not None

    async def drain(self) -> None:
        """One frame: everything the jobs produced since the last one, drawn at once."""
        items = self.inbox.take()
        pending: list[str] = []
        for rid, event in items:
            if rid == self.active and isinstance(event, (Text, Step)):
                if isinstance(event, Text):
                    if rid not in self.views:
                        await self.prepare_event(rid, event)
                    pending.append(event.delta)
                else:
                    self._dirty = True
                self.metrics.feed(event)   # a step's figures need no text drawn before them
                continue
            await self.write_pending(pending)
            await self.handle(rid, event)
        wrote = await self.write_pending(pending)
        if self._dirty and self.is_current and (self.active is None or now() - self._panels_t >= PANELS_S):
            if wrote:
                # half a frame later: redrawn in the same frame as the text, the panels and the
                # text make one dirty rectangle over the whole screen, and every widget in it
                # renders again (frames cost twice as much, measured)
                self._panels_t = now()
                self.set_timer(FRAME_S / 2, self.show_panels)
            else:
                self.show_panels()
        if not self.jobs and not self.inbox:
            self._frames.pause()

    async def write_pending(self, pending: list[str]) -> bool:
        """Text of the active request gathered in this frame, drawn at once; True if any was."""
        view = self.views.get(self.active) if self.active is not None else None
        wrote = bool(pending) and view is not None
        if wrote:
            await view.write("".join(pending))
        pending.clear()
        return wrote

    async def handle(self, rid: int, event: Any) -> None:
        await self.prepare_event(rid, event)
        if isinstance(event, Finished):
            await self.job_finished(rid, event.error)
            if not self.jobs:
                await self.run_deferred()
        elif isinstance(event, Saved):
            await self.on_saved(rid, event)
        elif rid != self.active:
            return                                      # a cancelled request winding down
        elif isinstance(event, (Prefill, Step)):
            self.metrics.feed(event)
            self._dirty = True
        elif isinstance(event, Notice):
            self.notify(event.message, severity="warning")
            await self.query_one(Transcript).note(event.message)
        elif isinstance(event, Done):
            self.metrics.feed(event)
            self._dirty = True
            view = self.views.get(rid)
            if view is not None:
                await view.finish(stats_of(event))
            self.active = None
            self.request_done(event)
        else:
            await self.on_other_event(rid, event)

    async def job_finished(self, rid: int, error: str | None) -> None:
        self.jobs.pop(rid, None)
        view = self.views.pop(rid, None)
        if error:
            self.notify(error, title="Error", severity="error", timeout=8)
        if rid == self.active:
            self.active = None
            if view is not None and (view.streaming or error):
                await view.finish(note="error" if error else "")
        self._dirty = True
        if self._sessions_stale and not self.jobs:     # the request's own view first
            self._sessions_stale = False
            try:
                await self.refresh_sessions()
            except MemoryCallFailed:
                pass                    # told to the user by mem(); the request itself is over

    async def prepare_event(self, rid: int, event) -> None:
        pass

    async def on_other_event(self, rid: int, event) -> None:
        pass

    def request_done(self, done: Done) -> None:
        """A request finished (the context indicator of the assistant listens here)."""

    async def on_saved(self, rid: int, event: Saved) -> None:
        if rid == self.active and self.session_id is None:   # the agent opened the session
            self.session_id = event.session_id
        if event.role == "assistant" and rid in self.views:
            self.views[rid].message_id = event.message_id
        elif event.role == "user":
            user = self.query_one(Transcript).last("user")
            if user is not None and user.message_id is None:
                user.message_id = event.message_id
                if event.context is not None:
                    await user.set_context(event.context)
            if rid in self.jobs:
                # the list when the request ends: rebuilt now, it laid the screen out twice while
                # the answer started to stream (~20 ms each of the engine's cores)
                self._sessions_stale = True
            else:
                await self.refresh_sessions()

    def action_cancel(self) -> None:
        if self.active is None:
            raise SkipAction()
        rid, self.active = self.active, None
        self.jobs[rid].cancel.set()
        view = self.views.get(rid)
        if view is not None:
            self.run_worker(view.finish(note="cancelled"), group="ui")
        self.cancelled(rid)

    def cancelled(self, rid: int) -> None:
        self.notify("Cancelled: the partial answer is kept.")

    def cancel_all(self) -> list[Job]:
        """Cancel every running job of this screen (quitting); returns them."""
        jobs = list(self.jobs.values())
        for job in jobs:
            job.cancel.set()
        return jobs
