"""Helpers for the app's tests: building the app on the real engine or on the scripted one,
waiting on conditions (never on fixed sleeps), and reading what the app told the user.
(A module, not conftest.py: two conftest.py files cannot both be imported by name.)"""
from __future__ import annotations

import time
from pathlib import Path

from app.locations import Locations
from app.settings import Loaded, Settings
from app.tui.app import HexaApp

SIZE = (130, 36)


class RecordingApp(HexaApp):
    """The app, keeping every notification it showed (title, message, severity)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.shown: list[tuple[str, str, str]] = []

    def notify(self, message, *, title="", severity="information", **kwargs):
        self.shown.append((title, str(message), severity))
        return super().notify(message, title=title, severity=severity, **kwargs)


def locations_in(root: Path) -> Locations:
    return Locations(root / "config", root / "data", root / "cache", root / "logs")


def make_app(engine, root: Path, *, memory_factory=None, loaded: Loaded | None = None, **settings) -> RecordingApp:
    """The app on ``engine`` with a real memory under ``root`` (``hash_memory`` for the fast tier,
    whose temporary fallback memory then embeds with the test embedder too)."""
    locs = locations_in(root)
    loaded = loaded or Loaded(Settings(**{"max_tokens": 8, **settings}), locs.config_file)
    kwargs = {"memory_factory": memory_factory, "fallback_memory": hash_temporary_memory} if memory_factory else {}
    return RecordingApp(loaded, locs, engine_factory=lambda s, l, p: engine, **kwargs)


def hash_memory(locs, engine):
    """A real memory (SQLite + chromadb) that embeds with the deterministic test embedder."""
    from support.fakes import HashEmbedder
    from memory import Memory

    return Memory.open(locs.data, tokenizer=engine.encode, embedder=HashEmbedder())


def hash_temporary_memory(tokenizer=None):
    from app.loading import open_temporary_memory
    from support.fakes import HashEmbedder

    return open_temporary_memory(tokenizer=tokenizer, embedder=HashEmbedder())


async def wait(pilot, cond, timeout: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)


async def ready(pilot) -> None:
    """The model and the memory are loaded (a user types for a while; a test does not)."""
    await wait(pilot, lambda: pilot.app.runtime is not None and pilot.app.memory_warm.is_set(),
               what="the model and the memory")
    screen = pilot.app.screen
    await wait(pilot, lambda: getattr(screen, "_frames", None) is not None, 10, "the screen")


def idle(screen) -> bool:
    return screen.active is None and not screen.jobs and not screen.inbox


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def chat(pilot, text: str) -> None:
    """Send ``text`` from the composer and wait until the reply is finished and stored."""
    screen = pilot.app.screen
    n = screen.request
    screen.focus_input()
    await send(pilot, text)
    await wait(pilot, lambda: screen.request == n + 1 and idle(screen), what="the reply")


def shown(app, title: str | None = None) -> list[str]:
    return [m for t, m, _ in app.shown if title is None or t == title]


def palette_highlight(app) -> str:
    """The command palette's highlighted entry ("" when the palette is not open)."""
    from textual.command import CommandPalette
    from textual.widgets import OptionList

    if not isinstance(app.screen, CommandPalette):
        return ""
    options = app.screen.query_one(OptionList)
    index = options.highlighted
    return "" if index is None else str(options.get_option_at_index(index).prompt)
