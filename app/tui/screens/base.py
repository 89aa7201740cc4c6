"""What every mode screen shares: mode bar, sessions, transcript, live panels and the request pump."""
from __future__ import annotations

import re
import threading
from functools import partial
from typing import Awaitable, Callable, Iterator

from textual import events, on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, ListView, Static

from agents.common import stats_of
from agents.events import Saved
from engine.events import Done, Notice, Prefill, Step, Text

from ..keys import KEYS, bind
from ..messages import AgentEvent, AgentFailed, AgentFinished, RuntimeReady
from ..widgets.panels import Panels
from ..widgets.sessions import SessionItem, SessionList
from ..widgets.transcript import MessageView, Transcript
from .dialogs import ConfirmDialog, InputDialog, TextDialog


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class ModeBar(Static):
    """Mode tabs (from the app's mode registry) and the load status."""

    def render_bar(self, current: str, status: str) -> None:
        keymap = self.app.settings.keymap  # type: ignore[attr-defined]
        tabs = []
        for spec in self.app.specs:  # type: ignore[attr-defined]
            key = keymap.get(spec.binding_id, KEYS[spec.binding_id][0]).upper()
            style = "reverse b" if spec.name == current else "dim"
            tabs.append(f"[{style}] {key} {spec.title} [/]")
        self.update(" [b]hexa[/b]  " + " ".join(tabs) + (f"   {status}" if status else ""))


class ModeScreen(Screen):
    MODE = ""
    BINDINGS = [
        bind("chat.cancel", "cancel", priority=True),
        bind("session.new", "new_session"),
        # priority: the composer (TextArea) and Inputs bind F6, F7 and Ctrl+E themselves
        bind("session.rename", "rename_session", show=False, priority=True),
        bind("session.delete", "delete_session", show=False, priority=True),
        bind("session.system", "system_prompt", show=False),
        bind("session.export", "export_session", show=False, priority=True),
        bind("sessions.toggle", "toggle_sessions", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.session_id = None
        self.request = 0
        self.active: int | None = None          # request whose events are rendered
        self.views: dict[int, MessageView] = {}
        self.cancel_event: threading.Event | None = None
        self.deferred: Callable[[], Awaitable[None]] | None = None   # a send typed while loading
        self._dirty = False

    # -- layout -------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ModeBar(id="modebar")
        with Horizontal(id="body"):
            yield SessionList(id="sessions")
            with Vertical(id="main"):
                yield Transcript(id="transcript")
                yield from self.compose_input()
            yield Panels(id="panels")
        yield Footer()

    def compose_input(self) -> ComposeResult:
        return iter(())

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
        self.set_interval(0.1, self._refresh_panels)
        self.refresh_bar()
        if self.runtime is not None:
            await self.on_runtime_ready(RuntimeReady())

    NARROW = 110   # below this many columns the sessions list starts hidden (Ctrl+B shows it)

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < self.NARROW
        if narrow != self.has_class("narrow"):     # only on crossing, so Ctrl+B choices stick
            self.set_class(narrow, "narrow")
            self.query_one(SessionList).display = not narrow

    def on_screen_resume(self) -> None:
        self.refresh_bar()
        self._dirty = True

    def refresh_bar(self) -> None:
        self.query_one(ModeBar).render_bar(self.MODE, self.app.status)  # type: ignore[attr-defined]

    def _refresh_panels(self) -> None:
        if self._dirty and self.is_current:
            self._dirty = False
            self.query_one(Panels).show(self.app.metrics)  # type: ignore[attr-defined]

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

    # -- sessions -----------------------------------------------------------------------------------
    async def on_runtime_ready(self, _: RuntimeReady) -> None:
        self.refresh_bar()
        self._dirty = True
        sessions = self.memory.list_sessions(mode=self.MODE)
        if self.session_id is None and sessions:
            await self.open_session(sessions[0].id)
        else:
            await self.refresh_sessions()
        if self.deferred is not None:
            deferred, self.deferred = self.deferred, None
            await deferred()

    async def refresh_sessions(self) -> None:
        if self.runtime is not None:
            await self.query_one(SessionList).show(self.memory.list_sessions(mode=self.MODE), self.session_id)

    async def open_session(self, session_id) -> None:
        self.session_id = session_id
        await self.query_one(Transcript).load(self.memory.messages(session_id))
        await self.refresh_sessions()

    def ensure_session(self):
        if self.session_id is None:
            self.session_id = self.memory.new_session(self.MODE, model=self.runtime.engine.model_name).id
        return self.session_id

    @on(ListView.Selected, "#sessions")
    async def _selected(self, event: ListView.Selected) -> None:
        if isinstance(event.item, SessionItem) and event.item.session.id != self.session_id:
            if self.active is not None:
                self.action_cancel()
            await self.open_session(event.item.session.id)

    async def action_new_session(self) -> None:
        if self.ready():
            if self.active is not None:
                self.action_cancel()
            self.session_id = None
            await self.query_one(Transcript).clear()
            await self.refresh_sessions()
            self.focus_input()

    def focus_input(self) -> None:
        pass

    def _need_session(self) -> bool:
        if not self.ready():
            return False
        if self.session_id is None:
            self.notify("No session yet: send a message first.", severity="warning")
            return False
        return True

    def action_rename_session(self) -> None:
        if not self._need_session():
            return
        session = self.memory.get_session(self.session_id)

        async def done(title: str | None) -> None:
            if title:
                self.memory.rename_session(self.session_id, title)
                await self.refresh_sessions()
        self.app.push_screen(InputDialog("Rename session", session.title), done)

    def action_delete_session(self) -> None:
        if not self._need_session():
            return
        session = self.memory.get_session(self.session_id)

        async def done(yes: bool | None) -> None:
            if yes:
                self.memory.delete_session(session.id)
                self.session_id = None
                await self.query_one(Transcript).clear()
                await self.refresh_sessions()
                self.notify(f"Deleted “{session.title}”.")
        self.app.push_screen(ConfirmDialog(f"Delete session “{session.title}” and its messages?"), done)

    def action_system_prompt(self) -> None:
        if not self.ready():
            return
        sid = self.ensure_session()
        session = self.memory.get_session(sid)

        def done(text: str | None) -> None:
            if text is not None:
                self.memory.set_system_prompt(sid, text)
                self.notify("System prompt saved for this session.")
        self.app.push_screen(TextDialog("System prompt of this session (empty: default)",
                                        session.system_prompt), done)

    def action_export_session(self) -> None:
        if not self._need_session():
            return
        from app.locations import ensure
        session = self.memory.get_session(self.session_id)
        slug = re.sub(r"[^A-Za-z0-9]+", "-", session.title).strip("-").lower() or "session"
        path = ensure(self.app.locs.data / "exports") / f"{slug}-{session.id}.md"  # type: ignore[attr-defined]
        path.write_text(self.memory.export_session(session.id, fmt="md"), encoding="utf-8")
        self.notify(f"Exported to {path}")

    def action_toggle_sessions(self) -> None:
        sessions = self.query_one(SessionList)
        sessions.display = not sessions.display

    # -- requests -----------------------------------------------------------------------------------
    def start(self, job: Callable[[threading.Event], Iterator], view: MessageView | None) -> None:
        self.request += 1
        rid = self.active = self.request
        if view is not None:
            self.views[rid] = view
        self.cancel_event = cancel = threading.Event()
        self.app.metrics.begin(self.app.settings.method)  # type: ignore[attr-defined]
        self._dirty = True
        self.run_worker(partial(self._pump, rid, job, cancel), thread=True, exclusive=True,
                        group=f"generate-{self.MODE}", exit_on_error=False)

    def _pump(self, rid: int, job, cancel: threading.Event) -> None:
        """Worker thread: run the agent and post its events, in order, to this screen."""
        runtime = self.runtime
        try:
            with runtime.lock:
                for event in job(cancel):
                    self.post_message(AgentEvent(rid, event))
        except Exception as exc:  # every failure becomes a notification
            self.post_message(AgentFailed(rid, one_line(exc)))
        finally:
            self.post_message(AgentFinished(rid))

    async def on_agent_event(self, message: AgentEvent) -> None:
        event, rid = message.event, message.request
        await self.prepare_event(rid, event)
        if isinstance(event, Saved):
            await self.on_saved(rid, event)
            return
        if rid != self.active:
            return                                      # a cancelled request winding down
        if isinstance(event, (Prefill, Step, Text, Done)):
            self.app.metrics.feed(event)  # type: ignore[attr-defined]
            self._dirty = True
        if isinstance(event, Text):
            await self.view_for(rid).write(event.delta)
        elif isinstance(event, Notice):
            self.notify(event.message, severity="warning")
            await self.query_one(Transcript).note(event.message)
        elif isinstance(event, Done):
            await self.view_for(rid).finish(stats_of(event))
            self.active = None
        else:
            await self.on_other_event(rid, event)

    async def prepare_event(self, rid: int, event) -> None:
        pass

    def view_for(self, rid: int) -> MessageView:
        return self.views[rid]

    async def on_other_event(self, rid: int, event) -> None:
        pass

    async def on_saved(self, rid: int, event: Saved) -> None:
        if event.role == "assistant" and rid in self.views:
            self.views[rid].message_id = event.message_id
        elif event.role == "user":
            user = self.query_one(Transcript).last("user")
            if user is not None and user.message_id is None:
                user.message_id = event.message_id
            await self.refresh_sessions()

    async def on_agent_failed(self, message: AgentFailed) -> None:
        self.notify(message.error, title="Error", severity="error", timeout=8)
        if message.request == self.active:
            view = self.views.get(message.request)
            if view is not None:
                await view.finish(note="error")
            self.active = None

    async def on_agent_finished(self, message: AgentFinished) -> None:
        view = self.views.pop(message.request, None)
        if message.request == self.active:
            self.active = None
            if view is not None and view.streaming:
                await view.finish()
        self._dirty = True

    def action_cancel(self) -> None:
        if self.active is None:
            raise SkipAction()
        rid, self.active = self.active, None
        if self.cancel_event is not None:
            self.cancel_event.set()
        view = self.views.get(rid)
        if view is not None:
            self.run_worker(view.finish(note="cancelled"), group="ui")
        self.notify("Generation cancelled.")

    def palette_commands(self) -> list[tuple[str, str, Callable]]:
        return [
            ("New session", "Start a new session in this mode", self.action_new_session),
            ("Rename session", "Rename the current session", self.action_rename_session),
            ("Delete session", "Delete the current session", self.action_delete_session),
            ("Edit system prompt", "The system prompt of this session", self.action_system_prompt),
            ("Export session to Markdown", "Write the session to a .md file", self.action_export_session),
            ("Toggle sessions list", "Show or hide the sidebar", self.action_toggle_sessions),
        ]
