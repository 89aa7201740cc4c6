"""Assistant mode: chat with streaming Markdown."""
from __future__ import annotations

from typing import Callable

from textual import on
from textual.app import ComposeResult

from ..keys import bind
from ..widgets.composer import Composer
from ..widgets.transcript import Transcript, code_blocks
from .base import ModeScreen


class AssistantScreen(ModeScreen):
    MODE = "assistant"
    BINDINGS = [bind("chat.regenerate", "regenerate")]

    def compose_input(self) -> ComposeResult:
        composer = Composer(id="composer")
        composer.border_title = "Message (Enter sends, Ctrl+J new line)"
        yield composer

    def focus_input(self) -> None:
        self.query_one(Composer).focus()

    def on_mount(self) -> None:
        self.focus_input()

    @on(Composer.Submitted)
    async def send(self, message: Composer.Submitted) -> None:
        if not self.ready(retry=lambda: self.send(message)):
            return
        if self.active is not None:
            self.notify("Still generating: Esc cancels.", severity="warning")
            return
        message.composer.clear()
        sid = self.ensure_session()
        transcript = self.query_one(Transcript)
        await transcript.add("user", message.text)
        view = await transcript.add("assistant")
        view.set_footer("generating…")
        agent = self.agent
        self.start(lambda cancel: agent.respond(sid, message.text, cancel), view)

    async def action_regenerate(self) -> None:
        if not self._need_session() or self.active is not None:
            return
        transcript = self.query_one(Transcript)
        last = transcript.last()
        if last is not None and last.role == "assistant":
            await last.remove()
        view = await transcript.add("assistant")
        view.set_footer("regenerating…")
        sid, agent = self.session_id, self.agent
        self.start(lambda cancel: agent.regenerate(sid, cancel), view)

    def _copy_last(self, code: bool) -> None:
        view = self.query_one(Transcript).last("assistant")
        if view is None:
            self.notify("No response to copy yet.", severity="warning")
        elif code:
            view.action_copy_code()
        else:
            view.action_copy()

    def palette_commands(self) -> list[tuple[str, str, Callable]]:
        return super().palette_commands() + [
            ("Regenerate response", "Answer the last message again", self.action_regenerate),
            ("Copy last response", "Copy the last response to the clipboard", lambda: self._copy_last(False)),
            ("Copy last code block", "Copy the last code block of the last response",
             lambda: self._copy_last(True)),
        ]


__all__ = ["AssistantScreen", "code_blocks"]
