"""F1: every key (as remapped in the config) and where the files are."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from app.keys import KEYS


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", show=False)]
    DEFAULT_CLASSES = "dialog"

    def compose(self) -> ComposeResult:
        keymap = self.app.settings.keymap  # type: ignore[attr-defined]
        table = DataTable(cursor_type="row", zebra_stripes=True, id="keys")
        table.add_columns("Key", "Action", "Binding id")
        for binding_id, (keys, text) in KEYS.items():
            table.add_row(keymap.get(binding_id, keys), text, binding_id)
        locs = self.app.locs  # type: ignore[attr-defined]
        with Vertical(classes="box tall"):
            # markup=False: "[keymap]" is a TOML table name here, not a style
            yield Label("hexa — keys (remap them under [keymap] in config.toml)", classes="title", markup=False)
            yield table
            key = lambda binding_id: keymap.get(binding_id, KEYS[binding_id][0])  # noqa: E731
            yield Label(f"Tab moves the focus to the messages (Shift+Tab back): on a message, {key('message.copy')} "
                        f"copies it, {key('message.edit')} edits it (yours: edit and resend), "
                        f"{key('message.delete')} deletes it.", classes="dim", markup=False)
            yield Label("Ctrl+P opens the command palette: modes, sessions, documents and actions.", classes="dim")
            yield Label(f"Config: {locs.config_file}   Data: {locs.data}", classes="dim", markup=False)
            yield Label("Esc (or F1) closes this help.", classes="dim")
