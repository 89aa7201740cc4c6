"""F1: every key (as remapped in the config) and where the files are."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from ..keys import KEYS


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", show=False)]
    DEFAULT_CLASSES = "dialog"

    def compose(self) -> ComposeResult:
        keymap = getattr(self.app, "settings").keymap
        table = DataTable(cursor_type="row", zebra_stripes=True, id="keys")
        table.add_columns("Key", "Action", "Binding id")
        for binding_id, (keys, text) in KEYS.items():
            table.add_row(keymap.get(binding_id, keys), text, binding_id)
        with Vertical(classes="box tall"):
            yield Label("hexa — keys (remap them under [keymap] in config.toml)", classes="title")
            yield table
            yield Label(f"Config: {self.app.locs.config_file}   Data: {self.app.locs.data}",  # type: ignore[attr-defined]
                        classes="dim")
            yield Label("Ctrl+P opens the command palette: modes, sessions and actions.", classes="dim")
