"""Snapshots of each mode and the settings screen, made stable: fixed size, no cursor blink, fixed
paths and memory figure, and a deterministic event source (tui_fakes.FakeEngine) for the panels."""
from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import Input, TextArea

from app.config import Settings
from app.locations import Locations
from app.tui.app import HexaApp
from tui_fakes import FakeEngine

SIZE = (130, 36)
ROOT = Path("/tmp/hexa-snapshot")   # fixed: the settings screen shows the config path


def make_app() -> HexaApp:
    shutil.rmtree(ROOT, ignore_errors=True)
    locs = Locations(ROOT / "config", ROOT / "data", ROOT / "cache", ROOT / "logs")
    return HexaApp(Settings(retrieval=False, history_drafting=False), locs,
                   engine_factory=lambda s, l, p: FakeEngine(), rss_probe=lambda: 321.0)


async def settle(pilot, until=lambda app: True, timeout: float = 60.0) -> None:
    app = pilot.app
    waited = 0.0
    while (app.runtime is None or not until(app)) and waited < timeout:
        await pilot.pause(0.1)
        waited += 0.1
    for widget in app.screen.query("TextArea, Input"):
        if isinstance(widget, (TextArea, Input)):
            widget.cursor_blink = False
    await pilot.pause(0.3)


def test_assistant_mode(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press(*"hello", "enter")
        await settle(pilot, lambda app: app.screen.active is None and app.screen.request == 1
                     and all(w.is_finished for w in app.screen.workers))

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_summarizer_mode(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("f3")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_settings_screen(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("f8")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)
