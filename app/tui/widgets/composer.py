"""Message composer: Enter sends, Ctrl+J inserts a new line (both remappable)."""
from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.widgets import TextArea

from ..keys import bind


class Composer(TextArea):
    BINDINGS = [bind("chat.send", "submit", priority=True),
                bind("chat.newline", "newline", priority=True, show=False)]

    @dataclass
    class Submitted(Message):
        composer: "Composer"
        text: str

    def __init__(self, **kwargs):
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)

    # The bindings are priority bindings (the TextArea would take Enter itself), so the app runs
    # them as soon as the key arrives, while keys typed just before may still wait in this
    # widget's queue (a burst of typing while the app is busy). call_later queues the work behind
    # them, so "Hello⏎" always sends "Hello", never "Hell" or nothing.
    def action_submit(self) -> None:
        self.call_later(self._submit)

    def action_newline(self) -> None:
        self.call_later(self.insert, "\n")

    def _submit(self) -> None:
        text = self.text.strip()
        if text:
            self.post_message(self.Submitted(self, text))
