"""Transcript: one ``MessageView`` per message, streamed with Markdown deltas, with a stats footer."""
from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Markdown, Static
from textual.widgets._markdown import MarkdownStream

from ..keys import bind
from ..metrics import footer_text

CODE_BLOCK = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
ROLE_TITLES = {"user": "You", "assistant": "hexa", "notice": "notice"}


def code_blocks(text: str) -> list[str]:
    return [m.group(1).rstrip("\n") for m in CODE_BLOCK.finditer(text)]


class MessageView(Vertical, can_focus=True):
    """A message: role line, Markdown body (appended to while streaming) and a footer."""

    BINDINGS = [bind("message.copy", "copy"), bind("message.copy_code", "copy_code")]

    def __init__(self, role: str, text: str = "", message_id=None, stats: dict | None = None):
        super().__init__(classes=f"message {role}")
        self.role = role
        self.text = text
        self.message_id = message_id
        self.stats = stats or {}
        self._stream: MarkdownStream | None = None

    def compose(self) -> ComposeResult:
        yield Static(ROLE_TITLES.get(self.role, self.role), classes="role")
        yield Markdown(self.text, classes="body")
        yield Static(footer_text(self.stats), classes="footer")

    @property
    def streaming(self) -> bool:
        return self._stream is not None

    async def write(self, delta: str) -> None:
        """Append a delta (only the new text is parsed and mounted, not the whole message)."""
        if not delta:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        self.text += delta
        await self._stream.write(delta)

    async def finish(self, stats: dict | None = None, note: str = "") -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()
            # One full parse at the end: fragment boundaries can split inline markup while streaming.
            await self.query_one(Markdown).update(self.text)
        if stats is not None:
            self.stats = stats
        line = footer_text(self.stats)
        self.query_one(".footer", Static).update(" · ".join(x for x in (line, note) if x))
        if not self.text.strip():
            await self.query_one(Markdown).update("*(no text)*")

    def set_footer(self, text: str) -> None:
        self.query_one(".footer", Static).update(text)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("Message copied to the clipboard.")

    def action_copy_code(self) -> None:
        blocks = code_blocks(self.text)
        if not blocks:
            self.notify("No code block in this message.", severity="warning")
            return
        self.app.copy_to_clipboard(blocks[-1])
        self.notify("Code block copied to the clipboard.")


class Transcript(VerticalScroll):
    """The messages of one session."""

    async def clear(self) -> None:
        await self.remove_children()

    async def add(self, role: str, text: str = "", message_id=None, stats: dict | None = None) -> MessageView:
        view = MessageView(role, text, message_id, stats)
        await self.mount(view)
        self.scroll_end(animate=False)
        return view

    async def load(self, messages) -> None:
        await self.remove_children()
        views = [MessageView(m.role, m.text, m.id, m.stats) for m in messages
                 if m.role in ("user", "assistant")]
        if views:
            await self.mount_all(views)
        self.scroll_end(animate=False)

    def messages(self) -> list[MessageView]:
        return list(self.query(MessageView))

    def last(self, role: str | None = None) -> MessageView | None:
        views = [v for v in self.messages() if role is None or v.role == role]
        return views[-1] if views else None

    async def note(self, text: str) -> None:
        await self.mount(Static(text, classes="notice"))
        self.scroll_end(animate=False)
