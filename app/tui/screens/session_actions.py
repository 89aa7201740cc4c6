"""Session and message actions of a mode screen: open, new, rename, delete, system prompt, export,
and editing or deleting one message. Every memory call goes through ``ModeScreen.mem`` (a thread)."""
from __future__ import annotations

import re

from textual import work
from textual.widgets import ListView

from ..widgets.sessions import SessionItem, SessionList
from ..widgets.transcript import MessageView, Transcript
from .dialogs import ConfirmDialog, EditDialog, InputDialog, TextDialog


class MemoryCallFailed(Exception):
    """A memory call failed; the user has been told (``ModeScreen.mem``)."""


def memory_action(method):
    """A handler whose memory call may fail: the user was told (``mem``), the handler just stops."""
    async def run(self, *args, **kwargs):
        try:
            return await method(self, *args, **kwargs)
        except MemoryCallFailed:
            return None
    run.__name__, run.__doc__ = method.__name__, method.__doc__
    return run


class SessionActions:
    """Mixed into ``ModeScreen`` (which provides ``mem``, ``ready``, ``runtime``, ``MODE``...)."""

    DEFAULT_TITLE = "New chat"
    RESENDS = False        # an edited user message can be answered again (the screen has ``resend``)

    async def refresh_sessions(self) -> None:
        if self.runtime is not None:
            sessions = await self.mem(self.memory.list_sessions, mode=self.MODE)
            await self.query_one(SessionList).show(sessions, self.session_id)

    async def open_session(self, session_id) -> None:
        messages = await self.mem(self.memory.messages, session_id)
        self.session_id = session_id
        await self.query_one(Transcript).load(messages)
        await self.refresh_sessions()
        self.session_opened(session_id)

    def session_opened(self, session_id) -> None:
        """Hook: a session is shown (the assistant updates its context indicator)."""

    async def ensure_session(self, title: str | None = None):
        if self.session_id is None:
            session = await self.mem(self.memory.new_session, self.MODE, title=title or self.DEFAULT_TITLE,
                                     model=self.runtime.engine.model_name)
            self.session_id = session.id
        return self.session_id

    # A handler by name, not @on: Textual gathers @on handlers only from its own classes' bodies,
    # and this is a plain mixin (an @on here was silently never called).
    @memory_action
    async def on_list_view_selected(self, event: ListView.Selected) -> None:
        if event.list_view.id != "sessions":
            return
        if isinstance(event.item, SessionItem) and event.item.session.id != self.session_id:
            if self.active is not None:
                self.action_cancel()
            await self.open_session(event.item.session.id)

    @memory_action
    async def action_new_session(self) -> None:
        if self.ready():
            if self.active is not None:
                self.action_cancel()
            self.session_id = None
            await self.query_one(Transcript).clear()
            await self.refresh_sessions()
            self.session_opened(None)
            self.focus_input()

    def _need_session(self) -> bool:
        if not self.ready():
            return False
        if self.session_id is None:
            self.notify("No session yet: send a message first.", severity="warning")
            return False
        return True

    @work(group="ui")
    @memory_action
    async def action_rename_session(self) -> None:
        if not self._need_session():
            return
        sid = self.session_id
        session = await self.mem(self.memory.get_session, sid)
        title = await self.app.push_screen_wait(InputDialog("Rename session", session.title))
        if title:
            await self.mem(self.memory.rename_session, sid, title)
            await self.refresh_sessions()

    @work(group="ui")
    @memory_action
    async def action_delete_session(self) -> None:
        if not self._need_session():
            return
        session = await self.mem(self.memory.get_session, self.session_id)
        if not await self.app.push_screen_wait(
                ConfirmDialog(f"Delete session “{session.title}” and its messages?")):
            return
        if self.active is not None:
            self.action_cancel()
        await self.mem(self.memory.delete_session, session.id)
        if self.session_id == session.id:
            self.session_id = None
            await self.query_one(Transcript).clear()
            self.session_opened(None)
        await self.refresh_sessions()
        self.notify(f"Deleted “{session.title}”.")

    @work(group="ui")
    @memory_action
    async def action_system_prompt(self) -> None:
        if not self.ready():
            return
        sid = await self.ensure_session()
        session = await self.mem(self.memory.get_session, sid)
        text = await self.app.push_screen_wait(
            TextDialog("System prompt of this session (empty: default)", session.system_prompt))
        if text is not None:
            await self.mem(self.memory.set_system_prompt, sid, text)
            await self.refresh_sessions()
            self.notify("System prompt saved for this session.")

    @memory_action
    async def action_export_session(self) -> None:
        if not self._need_session():
            return
        from app.locations import ensure

        session = await self.mem(self.memory.get_session, self.session_id)
        slug = re.sub(r"[^A-Za-z0-9]+", "-", session.title).strip("-").lower() or "session"
        path = ensure(self.app.locs.data / "exports") / f"{slug}-{session.id}.md"  # type: ignore[attr-defined]
        text = await self.mem(self.memory.export_session, session.id, fmt="md")
        await self.mem(path.write_text, text, encoding="utf-8")
        self.notify(f"Exported to {path}")

    def action_toggle_sessions(self) -> None:
        sessions = self.query_one(SessionList)
        sessions.display = not sessions.display

    # -- one message ---------------------------------------------------------------------------
    def _editable(self, view: MessageView) -> bool:
        if self.active is not None:
            self.notify("Still generating: Esc cancels.", severity="warning")
            return False
        if view.message_id is None:
            self.notify("This message is not saved yet.", severity="warning")
            return False
        return True

    @work(group="ui")
    @memory_action
    async def edit_message(self, view: MessageView) -> None:
        if not self._editable(view):
            return
        if self.RESENDS and view.role == "user":
            choice = await self.app.push_screen_wait(EditDialog(view.text))
            if not choice or not choice[1]:
                return
            if choice[0] == "resend":
                await self.resend(view, choice[1])  # type: ignore[attr-defined]
                return
            text = choice[1]
        else:
            text = await self.app.push_screen_wait(TextDialog(f"Edit this {'message' if view.role == 'user' else 'response'}",
                                                              view.text))
        if not text or text == view.text:
            return
        # an edited response is no longer the model's output: it stops being a drafting source
        await self.mem(self.memory.update_message, view.message_id, text=text, token_ids=None)
        await view.replace_text(text)
        view.set_footer("edited")

    @work(group="ui")
    @memory_action
    async def delete_message(self, view: MessageView) -> None:
        if not self._editable(view):
            return
        what = "message" if view.role == "user" else "response"
        if not await self.app.push_screen_wait(ConfirmDialog(f"Delete this {what}?")):
            return
        await self.mem(self.memory.delete_message, view.message_id)
        transcript = self.query_one(Transcript)
        y = transcript.scroll_y
        views = transcript.messages()
        at = views.index(view)
        neighbour = (views[at + 1:] or views[:at][-1:] or [None])[0]
        # the focus moves first, without scrolling: removing the focused message made Textual focus
        # another one *and scroll it to the centre* (18 rows at 120x40), and with no message left
        # focused the focus fell to the first one: a jump to the top
        self.set_focus(neighbour, scroll_visible=False)  # type: ignore[attr-defined]
        await view.remove()
        transcript.scroll_to(y=min(y, transcript.max_scroll_y), animate=False, immediate=True)
        self.notify(f"Deleted the {what}.")


    def palette_commands(self) -> list[tuple[str, str, object]]:
        return [
            ("New session", "Start a new session in this mode", self.action_new_session),
            ("Rename session", "Rename the current session", self.action_rename_session),
            ("Delete session", "Delete the current session", self.action_delete_session),
            ("Edit system prompt", "The system prompt of this session", self.action_system_prompt),
            ("Export session to Markdown", "Write the session to a .md file", self.action_export_session),
            ("Toggle sessions list", "Show or hide the sidebar", self.action_toggle_sessions),
            ("Toggle live panels", "Show or hide acceptance, latency and device", self.action_toggle_panels),
        ]
