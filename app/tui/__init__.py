"""hexa's Textual TUI. ``run_tui(loaded, locations)`` is what ``hexa`` with no subcommand runs."""
from __future__ import annotations

from typing import Any


def run_tui(loaded, locations, **kwargs: Any) -> int:
    from .app import HexaApp

    app = HexaApp(loaded, locations, **kwargs)
    app.run()
    return app.return_code or 0


__all__ = ["run_tui"]
