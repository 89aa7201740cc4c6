"""Textual bindings from the key table in ``app/keys.py`` (ids remappable in config.toml)."""
from __future__ import annotations

from textual.binding import Binding

from app.keys import KEYS


def bind(binding_id: str, action: str, *, show: bool = True, priority: bool = False,
         key_display: str | None = None) -> Binding:
    keys, description = KEYS[binding_id]
    return Binding(keys, action, description.split(":")[0], show=show, priority=priority,
                   id=binding_id, key_display=key_display)
