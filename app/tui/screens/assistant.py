"""Assistant mode: chat with streaming Markdown, regenerate, continue, a context-usage gauge and
the memory switches (Ctrl+L: the next message; the palette: this session)."""
from __future__ import annotations

from typing import Callable

from textual import on, work
from textual.app import ComposeResult

from agents.events import Saved
from engine.events import Done

from ..keys import bind
from ..widgets.composer import Composer
from ..widgets.transcript import Transcript
from .base import ModeScreen
from .session_actions import memory_action


COMPOSER_TITLE = "Message (Enter sends, Ctrl+J new line)"


def context_label(sent: int, window: int, answer: int = 0) -> str:
    """The gauge: the tokens the last request sent, exactly (its prompt ids), and its answer."""
    used = sent + answer
    tail = f" + {answer:,} answer" if answer else ""
    return f"context {sent:,} sent{tail} / {window:,} tokens ({100 * used / max(window, 1):.0f}%)"


class AssistantScreen(ModeScreen):
    MODE = "assistant"
    RESENDS = True
    BINDINGS = [bind("chat.regenerate", "regenerate"), bind("chat.continue", "continue_response"),
                bind("chat.memory", "toggle_memory", show=False)]   # listed in F1

    def __init__(self) -> None:
        super().__init__()
        self.next_memory: bool | None = None     # the next message's switch (None: the session's)
        self.sent_tokens = 0                     # the last request's prompt, in tokens

    def compose_input(self) -> ComposeResult:
        composer = Composer(id="composer")
        composer.border_title = COMPOSER_TITLE
        yield composer

    def focus_input(self) -> None:
        self.query_one(Composer).focus()

    @on(Composer.Submitted)
    async def send(self, message: Composer.Submitted) -> None:
        if not self.ready(retry=lambda: self.send(message)):
            return
        if self.busy:
            self.notify("Still generating: Esc cancels.", severity="warning")
            return
        message.composer.clear()
        transcript = self.query_one(Transcript)
        await transcript.add("user", message.text)
        view = await transcript.add("assistant")
        view.begin("generating…")
        sid, agent, text, memory = self.session_id, self.agent, message.text, self.next_memory
        self.next_memory = None                  # a one-message switch
        self.show_memory_switch()
        self.start(lambda job: agent.respond(sid, text, job.cancel, retrieval=memory), view)

    # -- memory switches --------------------------------------------------------------------------
    def action_toggle_memory(self) -> None:
        """Ctrl+L: the next message goes with (or without) context from memory, whatever the
        session's switch says; pressed again, the session's switch applies."""
        if self.runtime is None:
            return
        self.set_next_memory()

    @work(group="memory-switch", exclusive=True)
    @memory_action
    async def set_next_memory(self) -> None:
        session_on = await self.mem(self.agent.retrieval_on, self.session_id)
        self.next_memory = None if self.next_memory is not None else not session_on
        self.show_memory_switch()
        if self.next_memory is not None:
            self.notify(f"Next message: {'with' if self.next_memory else 'without'} memory "
                        f"(Ctrl+L again: as the session)")

    def show_memory_switch(self) -> None:
        note = {None: "", True: " · next: with memory", False: " · next: without memory"}[self.next_memory]
        self.query_one(Composer).border_title = COMPOSER_TITLE + note

    @memory_action
    async def toggle_session_memory(self) -> None:
        """The palette's switch: retrieval for this session, kept with it."""
        if not self._need_session():
            return
        sid = self.session_id
        on = not await self.mem(self.agent.retrieval_on, sid)
        await self.mem(self.memory.set_session_retrieval, sid, on)
        self.notify(f"Memory {'on' if on else 'off'} for this session: its messages are sent "
                    f"{'with' if on else 'without'} context from other chats and documents.")

    async def resend(self, view, text: str) -> None:
        """An edited message sent again: it and everything after it leave the session (memory
        too, on the job's thread), then it is answered as if just typed (with fresh retrieval)."""
        transcript = self.query_one(Transcript)
        children = list(transcript.children)
        later = children[children.index(view):]
        gone = [v.message_id for v in later if getattr(v, "message_id", None) is not None]
        await transcript.remove_children(later)
        await transcript.add("user", text)
        answer = await transcript.add("assistant")
        answer.begin("generating…")
        sid, agent, memory = self.session_id, self.agent, self.memory

        def job(j):
            for message_id in gone:
                memory.delete_message(message_id)
            yield from agent.respond(sid, text, j.cancel)
        self.start(job, answer)

    async def action_regenerate(self) -> None:
        if not self._need_session() or self.busy:
            return
        transcript = self.query_one(Transcript)
        last = transcript.last()
        if last is not None and last.role == "assistant":
            await last.remove()
        view = await transcript.add("assistant")
        view.begin("regenerating…")
        sid, agent = self.session_id, self.agent
        self.start(lambda job: agent.regenerate(sid, job.cancel), view)

    async def action_continue_response(self) -> None:
        """Generate more of the last response (one that stopped at the token limit, say)."""
        if not self._need_session() or self.busy:
            return
        view = self.query_one(Transcript).last()
        if view is None or view.role != "assistant" or view.message_id is None:
            self.notify("No saved response to continue.", severity="warning")
            return
        view.begin("continuing…")
        sid, agent = self.session_id, self.agent
        self.start(lambda job: agent.continue_last(sid, job.cancel), view)

    # -- context usage --------------------------------------------------------------------------
    def show_context(self, sent: int | None, answer: int = 0) -> None:
        window = self.runtime.engine.context_window if self.runtime is not None else 0
        self.query_one(Composer).border_subtitle = context_label(sent, window, answer) if sent and window else ""

    async def on_saved(self, rid: int, event: Saved) -> None:
        await super().on_saved(rid, event)
        if event.role == "user" and event.prompt_tokens and event.session_id == self.session_id:
            self.sent_tokens = event.prompt_tokens     # the prompt about to be sent, exactly
            self.show_context(event.prompt_tokens)

    def request_done(self, done: Done) -> None:
        if done.prompt_tokens:
            self.sent_tokens = done.prompt_tokens
            self.show_context(done.prompt_tokens, done.new_tokens)

    def session_opened(self, session_id) -> None:
        self.show_context(None)
        if session_id is not None:
            self.measure_context(session_id)

    @work(group="context", exclusive=True)
    @memory_action
    async def measure_context(self, session_id) -> None:
        used = await self.mem(self.agent.context_tokens, session_id)
        if session_id == self.session_id:
            self.show_context(used)

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
            ("Continue response", "Generate more of the last response", self.action_continue_response),
            ("Copy last response", "Copy the last response to the clipboard", lambda: self._copy_last(False)),
            ("Copy last code block", "Copy the last code block of the last response",
             lambda: self._copy_last(True)),
            ("Memory for this session: on/off", "Send this session's messages with or without "
             "context retrieved from other chats and documents", self.toggle_session_memory),
            ("Memory for the next message: on/off", "The next message only (Ctrl+L)", self.action_toggle_memory),
        ]
