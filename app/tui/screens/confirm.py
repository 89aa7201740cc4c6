"""The agent asks before a sensitive action: a modal with Allow / Deny (y / n; Esc denies).

The agent asks on its worker thread and must block until the answer. The question reaches the
UI as a message (``post_message`` is thread-safe and never blocks, unlike ``call_from_thread``,
which would wait forever on an app that is closing) and the thread waits on an Event the modal
sets. It gives up, denying, when the job is cancelled or the screen closes: Esc on the agent
screen, Ctrl+Q or a closed app can never leave the thread (and the app's exit) waiting.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Label

POLL_S = 0.05


@dataclass
class Ask:
    """One question and its answer (False until someone allows it)."""
    question: str
    answered: threading.Event = field(default_factory=threading.Event)
    allowed: bool = False

    def answer(self, allowed: bool) -> None:
        if not self.answered.is_set():
            self.allowed = bool(allowed)
            self.answered.set()


@dataclass
class AskUser(Message):
    """Posted by the agent's thread to the agent screen: show the question."""
    ask: Ask


def wait_for_answer(question: str, post: Callable[[Message], bool], give_up: Callable[[], bool]) -> bool:
    """Worker thread: ask, wait for the user; False (deny) when ``give_up()`` turns true first or
    the question cannot be shown."""
    ask = Ask(question)
    try:
        shown = not give_up() and post(AskUser(ask))
    except RuntimeError:        # the app's loop is gone
        shown = False
    if not shown:
        return False
    while not ask.answered.wait(POLL_S):
        if give_up():
            ask.answer(False)   # the modal sees it and closes
    return ask.allowed


class ConfirmAction(ModalScreen):
    BINDINGS = [Binding("y", "answer(True)", "Allow"), Binding("n", "answer(False)", "Deny"),
                Binding("escape", "answer(False)", "Deny", show=False)]
    DEFAULT_CLASSES = "dialog"

    def __init__(self, ask: Ask):
        super().__init__()
        self.ask = ask

    def compose(self) -> ComposeResult:
        with Vertical(classes="box", id="confirm-box"):
            yield Label("The agent asks", classes="title")
            yield Label(self.ask.question, id="question", markup=False)
            yield Horizontal(Button("Allow (y)", variant="warning", id="allow"),
                             Button("Deny (n)", variant="primary", id="deny"), classes="buttons")

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()        # Enter on a reflex must not allow
        self.set_interval(0.1, self._answered_elsewhere)

    def on_unmount(self) -> None:
        self.ask.answer(False)                         # closed unanswered (the app quit): deny

    def _answered_elsewhere(self) -> None:
        if self.ask.answered.is_set() and self.is_current:
            self.dismiss(self.ask.allowed)

    def action_answer(self, allowed: bool) -> None:
        self.ask.answer(allowed)
        if self.is_current:
            self.dismiss(allowed)

    @on(Button.Pressed, "#allow")
    def _allow(self) -> None:
        self.action_answer(True)

    @on(Button.Pressed, "#deny")
    def _deny(self) -> None:
        self.action_answer(False)
