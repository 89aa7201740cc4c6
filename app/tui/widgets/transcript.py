"""Transcript: one ``MessageView`` per message, streamed as it is generated, with a stats footer.

The transcript is anchored to its bottom: while the user is there, streamed text stays in view;
scrolling up releases the anchor (the text keeps arriving below) and scrolling back down to the
end takes it again, as in chat apps.

While a response streams, its finished Markdown blocks are drawn as Markdown and the block still
being written is drawn as plain text in the screen's ``StreamTail``, just below the transcript.
Textual re-mounts a whole block on every append (a 30-item list cost 326 ms per append by its
end) and lays the screen out again, so blocks move to the Markdown body only when the tail is
full, and at most once every ``MOVE_S``. The tail lives outside the transcript because Textual
redraws every visible widget of a scroll view when one of them changes: a frame cost ~12 ms of
the UI thread inside the transcript, a third of that outside (measured on a replayed answer),
time the engine waits for the GIL and a core.
"""
from __future__ import annotations

import re
from functools import lru_cache
from time import monotonic

from markdown_it import MarkdownIt
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Collapsible, Markdown, Static

from agents.assistant import describe, details
from memory import ResponseStats, SentContext

from ..keys import bind
from ..metrics import footer_text
from .stream_tail import StreamTail

MOVE_S = 1.0    # finished blocks leave a full tail at most this often: each move is a mount and a
                # layout of the screen (21-135 ms measured, in a six-answer session), and at 250
                # tokens a second a 16-row tail fills in about a second
CODE_BLOCK = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
ROLE_TITLES = {"user": "You", "assistant": "hexa", "notice": "notice"}


def code_blocks(text: str) -> list[str]:
    return [m.group(1).rstrip("\n") for m in CODE_BLOCK.finditer(text)]


def finished_blocks(text: str, start: int = 0) -> int:
    """Length of the prefix of ``text`` made of finished Markdown blocks: up to the last blank
    line that is not inside a code fence (``start``: a block boundary to scan from)."""
    cut = pos = start
    fenced = False
    for line in text[start:].splitlines(keepends=True):
        pos += len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not stripped and line.endswith("\n") and not fenced:
            cut = pos
    return cut


def _hard_breaks(state) -> None:
    """Every newline inside a paragraph is a line break, as typed (a message written with Ctrl+J,
    a poem): Markdown would join the lines into one paragraph. (markdown-it's ``breaks`` option
    only changes its HTML output; Textual draws the tokens, so the tokens themselves change.)"""
    for token in state.tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"


@lru_cache(maxsize=1)
def chat_parser() -> MarkdownIt:
    """One parser for every message, shared: Textual builds a new one on every streamed append
    otherwise."""
    parser = MarkdownIt("gfm-like")
    parser.core.ruler.push("hard_breaks", _hard_breaks)
    return parser


def context_line(context: SentContext) -> Collapsible:
    """The collapsed "context: 2 notes from 'Dragon story'" line; Enter or a click shows the notes."""
    return Collapsible(Static(details(context), markup=False, classes="context-notes"),
                       title=describe(context), collapsed=True, classes="context")


class MessageView(Vertical, can_focus=True):
    """A message: role line, Markdown body (appended to while streaming) and a footer."""

    BINDINGS = [bind("message.copy", "copy"), bind("message.copy_code", "copy_code"),
                bind("message.edit", "edit"), bind("message.delete", "delete")]

    def __init__(self, role: str, text: str = "", message_id=None, stats: ResponseStats | None = None,
                 context: SentContext | None = None):
        super().__init__(classes=f"message {role}")
        self.role = role
        self.text = text
        self.message_id = message_id
        self.stats = stats
        self.context = context
        self.streaming = False
        self._drawn = len(text)         # characters already drawn as Markdown
        self._moved = 0.0               # when finished blocks last moved from the tail to the body

    def compose(self) -> ComposeResult:
        yield Static(ROLE_TITLES.get(self.role, self.role), classes="role")
        yield Markdown(self.text, classes="body", parser_factory=chat_parser)
        if describe(self.context):
            yield context_line(self.context)
        yield Static(self._footer(), classes="footer")

    def _footer(self) -> str:
        return footer_text(self.stats, getattr(self.parent, "continues", True))

    async def set_context(self, context: SentContext | None) -> None:
        """Show what the message was sent with, once it is known (the agent retrieves it after
        the message is shown)."""
        self.context = context
        for old in self.query(".context"):
            await old.remove()
        if describe(context):
            await self.mount(context_line(context), before=self.query_one(".footer"))

    def _tail(self) -> StreamTail | None:
        try:
            return self.screen.query_one(StreamTail)
        except Exception:       # not on a screen (its session was closed): nothing to draw
            return None

    def begin(self, note: str) -> None:
        """A response is about to stream into this message: ``note`` ("generating…") shows where
        its text will, and the tail takes its first rows now, in the layout of the message's own
        mount, not in a layout of its own when the first token arrives (the engine is decoding by
        then: every layout is 15-50 ms of the two cores it uses)."""
        tail = self._tail()
        if tail is None:
            self.set_footer(note)
            return
        self._start_streaming()
        tail.show(note)

    def _start_streaming(self) -> None:
        self.streaming = True
        self._moved = monotonic()
        self.query_one(".footer", Static).display = False    # below the tail again when done

    async def write(self, delta: str) -> None:
        """Append streamed text: the block in progress to the tail, finished blocks to the body."""
        if not delta:
            return
        self.text += delta
        tail = self._tail()
        if tail is None:
            return
        if not self.streaming:         # no begin() (a summary's view appears with its text)
            self._start_streaming()
        rest = self.text[self._drawn:].strip("\n")
        if tail.fits(rest) or not tail.full:      # drawn as it is, or the tail grows (one layout)
            tail.show(rest)
            return
        # the tail is full: its finished blocks move to the body, at most once every MOVE_S;
        # meanwhile (and for a block taller than the tail) it shows its last rows
        cut = finished_blocks(self.text, self._drawn)
        if cut > self._drawn and monotonic() - self._moved >= MOVE_S:
            await self.query_one(Markdown).append(self.text[self._drawn:cut])
            self._drawn = cut
            self._moved = monotonic()
        tail.show(self.text[self._drawn:].strip("\n"))

    async def finish(self, stats: ResponseStats | None = None, note: str = "") -> None:
        if self.streaming:
            self.streaming = False
            tail = self._tail()
            if tail is not None:
                tail.clear()
            # one full parse at the end: the tail, and inline markup split across appends
            await self.query_one(Markdown).update(self.text)
            self._drawn = len(self.text)
            self.query_one(".footer", Static).display = True
        if stats is not None:
            self.stats = stats
        line = self._footer()
        self.query_one(".footer", Static).update(" · ".join(x for x in (line, note) if x))
        if not self.text.strip():
            await self.query_one(Markdown).update("*(no text)*")

    async def replace_text(self, text: str) -> None:
        """Show an edited message."""
        self.text = text
        self._drawn = len(text)
        await self.query_one(Markdown).update(text)

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

    # edit and delete change the session: the screen owns them (it knows the memory and the job)
    def action_edit(self) -> None:
        self.screen.edit_message(self)  # type: ignore[attr-defined]

    def action_delete(self) -> None:
        self.screen.delete_message(self)  # type: ignore[attr-defined]


class Transcript(VerticalScroll):
    """The messages of one session."""

    continues = True      # F5 continues a response cut at the token limit (not in every mode)

    def on_mount(self) -> None:
        self.anchor()

    async def clear(self) -> None:
        await self.remove_children()

    async def add(self, role: str, text: str = "", message_id=None, stats: ResponseStats | None = None) -> MessageView:
        view = MessageView(role, text, message_id, stats)
        await self.mount(view)
        self.scroll_end(animate=False)     # a new message takes the user to the end again
        return view

    async def load(self, messages) -> None:
        await self.remove_children()
        views = [MessageView(m.role, m.text, m.id, m.stats, m.context) for m in messages
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
        await self.mount(Static(text, classes="notice", markup=False))
        self.scroll_end(animate=False)
