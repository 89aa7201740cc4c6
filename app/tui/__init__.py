"""hexa's Textual TUI. ``run_tui(args)`` is what ``hexa`` with no subcommand runs."""
from __future__ import annotations

from typing import Any


def build_app(args: Any = None, **kwargs: Any):
    """The app with settings from config.toml < HEXA_* environment < ``args`` (.model, .method, ...)."""
    from app.config import load_settings_lenient
    from app.locations import locations

    from .app import HexaApp

    locs = locations()
    flags = {name: getattr(args, name, None) for name in ("model", "method", "backend", "threads", "context")}
    settings, error = load_settings_lenient(locs.config_file, **flags)
    return HexaApp(settings, locs, config_error=error, **kwargs)


def run_tui(args: Any = None) -> int:
    app = build_app(args)
    app.run()
    return app.return_code or 0


__all__ = ["build_app", "run_tui"]
