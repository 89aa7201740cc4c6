"""Settings screen: edit, validate and save to config.toml (environment and flags still override)."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Switch

from app.config import BACKENDS, METHODS, ConfigError, Settings

FIELDS = ("model", "backend", "method", "max_tokens", "temperature", "top_p", "retrieval",
          "history_drafting")


class SettingsScreen(ModalScreen[Settings | None]):
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", show=False)]
    DEFAULT_CLASSES = "dialog"

    def __init__(self, settings: Settings, path: str = ""):
        super().__init__()
        self.settings, self.path = settings, path

    def compose(self) -> ComposeResult:
        s = self.settings
        methods = list(dict.fromkeys([*METHODS, s.method]))
        with Vertical(classes="box tall", id="settings"):
            yield Label("Settings", classes="title")
            with VerticalScroll(id="settings-scroll"), Grid(id="settings-grid"):
                yield Label("Model")
                yield Input(s.model or "", placeholder="embedded SmolLM2-135M-Instruct", id="model")
                yield Label("Backend")
                yield Select([(b, b) for b in BACKENDS], value=s.backend, allow_blank=False, id="backend")
                yield Label("Decoding method")
                yield Select([(m, m) for m in methods], value=s.method, allow_blank=False, id="method")
                yield Label("Max new tokens")
                yield Input(str(s.max_tokens), type="integer", id="max_tokens")
                yield Label("Temperature")
                yield Input(str(s.temperature), type="number", id="temperature")
                yield Label("Top-p")
                yield Input(str(s.top_p), type="number", id="top_p")
                yield Label("Retrieval from memory")
                yield Switch(s.retrieval, id="retrieval")
                yield Label("Drafting from history")
                yield Switch(s.history_drafting, id="history_drafting")
            yield Label(f"Saved to {self.path}", classes="dim")
            yield Horizontal(Button("Save", variant="primary", id="ok"), Button("Cancel", id="cancel"),
                             classes="buttons")

    def values(self) -> dict:
        out = {}
        for name in FIELDS:
            widget = self.query_one(f"#{name}")
            out[name] = widget.value  # type: ignore[attr-defined]
        return out

    @on(Button.Pressed, "#ok")
    def save(self) -> None:
        try:
            new = Settings.from_mapping({**self.settings.to_dict(), **self.values(),
                                         "model": self.values()["model"] or None}, origin="settings")
        except ConfigError as exc:
            self.notify(str(exc), severity="error")
            return
        self.dismiss(new)

    @on(Button.Pressed, "#cancel")
    def action_dismiss_none(self) -> None:
        self.dismiss(None)
