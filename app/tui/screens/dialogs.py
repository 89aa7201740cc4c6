"""Small modal dialogs: a one-line input, a confirmation, a multi-line text, a file picker."""
from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DirectoryTree, Input, Label, TextArea


class _Dialog(ModalScreen):
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", show=False)]
    DEFAULT_CLASSES = "dialog"

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def buttons(self, ok: str = "OK") -> Horizontal:
        return Horizontal(Button(ok, variant="primary", id="ok"), Button("Cancel", id="cancel"),
                          classes="buttons")

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class InputDialog(_Dialog):
    def __init__(self, title: str, value: str = "", placeholder: str = ""):
        super().__init__()
        self.title_text, self.value, self.placeholder = title, value, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="box"):
            yield Label(self.title_text, classes="title")
            yield Input(self.value, placeholder=self.placeholder, id="value")
            yield self.buttons()

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.dismiss(self.query_one(Input).value.strip())


class ConfirmDialog(_Dialog):
    def __init__(self, question: str, ok: str = "Delete"):
        super().__init__()
        self.question, self.ok = question, ok

    def compose(self) -> ComposeResult:
        with Vertical(classes="box"):
            yield Label(self.question, classes="title")
            yield self.buttons(self.ok)

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.dismiss(True)


class TextDialog(_Dialog):
    def __init__(self, title: str, text: str = ""):
        super().__init__()
        self.title_text, self.text = title, text

    def compose(self) -> ComposeResult:
        with Vertical(classes="box tall"):
            yield Label(self.title_text, classes="title")
            yield TextArea(self.text, soft_wrap=True, id="text")
            yield self.buttons("Save")

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.dismiss(self.query_one(TextArea).text.strip())


class EditDialog(_Dialog):
    """Edit one of the user's own messages: save it, or save it and have it answered again.
    Dismissed with ("resend" | "save", text), or None."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(classes="box tall"):
            yield Label("Edit this message (Save and resend: the answers after it are replaced)", classes="title")
            yield TextArea(self.text, soft_wrap=True, id="text")
            yield Horizontal(Button("Save and resend", variant="primary", id="resend"), Button("Save only", id="ok"),
                             Button("Cancel", id="cancel"), classes="buttons")

    @on(Button.Pressed, "#resend")
    def _resend(self) -> None:
        self.dismiss(("resend", self.query_one(TextArea).text.strip()))

    @on(Button.Pressed, "#ok")
    def _save(self) -> None:
        self.dismiss(("save", self.query_one(TextArea).text.strip()))


class FilePicker(_Dialog):
    """Pick a file from a directory tree, or type a path."""

    def __init__(self, root: Path | None = None):
        super().__init__()
        self.root = root or Path.cwd()

    def compose(self) -> ComposeResult:
        with Vertical(classes="box tall"):
            yield Label("Choose a document to summarize", classes="title")
            yield DirectoryTree(self.root, id="tree")
            yield Input(placeholder="or type a path and press Enter", id="path")
            yield self.buttons("Summarize")

    @on(DirectoryTree.FileSelected)
    def _file(self, event: DirectoryTree.FileSelected) -> None:
        self.query_one("#path", Input).value = str(event.path)

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        value = self.query_one("#path", Input).value.strip()
        self.dismiss(Path(value).expanduser() if value else None)
