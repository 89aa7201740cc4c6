"""Snapshots of each mode and the settings and help screens, made stable: fixed size, no cursor
blink, fixed paths and memory figure, a deterministic event source (fakes.FakeEngine) for the
panels and the deterministic test embedder for the memory."""
from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import Input, TextArea

from app.settings import Loaded, Settings
from app.tui.app import HexaApp
from support.fakes import FakeEngine
from support.tui_helpers import hash_memory, idle, locations_in

SIZE = (130, 36)
ROOT = Path("/tmp/hexa-snapshot")   # fixed: the settings and help screens show the paths


def make_app(engine: FakeEngine | None = None) -> HexaApp:
    shutil.rmtree(ROOT, ignore_errors=True)
    locs = locations_in(ROOT)
    loaded = Loaded(Settings(retrieval=False, history_drafting=False), locs.config_file)
    engine = engine or FakeEngine()
    return HexaApp(loaded, locs, engine_factory=lambda s, l, p: engine, memory_factory=hash_memory,
                   rss_probe=lambda: 321.0)


async def settle(pilot, until=lambda app: True, timeout: float = 60.0) -> None:
    app = pilot.app
    waited = 0.0
    while (app.runtime is None or not until(app)) and waited < timeout:
        await pilot.pause(0.1)
        waited += 0.1
    for widget in app.screen.query("TextArea, Input"):
        if isinstance(widget, (TextArea, Input)):
            widget.cursor_blink = False
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.3)


def test_assistant_mode(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press(*"hello", "enter")
        await settle(pilot, lambda app: app.screen.request == 1 and idle(app.screen))

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


def test_agent_mode(snap_compare):
    """Agent mode with a phone connected and a past episode opened from memory (so the picture is
    the app's, whatever the agent would do today): the device bar with Explore, the apps explored,
    the step log with a step's figures, the sessions list with each episode's outcome, the phone."""
    from support.agent_fakes import SETTINGS, FakeDevice
    from app.tui.device_link import Connected
    from app.tui.screens.agent import DeviceStatus

    def remember(memory) -> int:
        graphs = memory.ui_graphs
        for title in ("Settings", "Connected devices", "Bluetooth"):
            graphs.put_screen(SETTINGS, {"title": title})
        graphs.put_app(SETTINGS, None, {"actions": 120, "seconds": 30.0, "complete": False})
        failed = memory.episodes.start("Delete all messages", "127.0.0.1:5555", "fake")
        memory.episodes.add_step(failed.session_id, {"app": "Settings", "title": "Connected devices",
                                                     "element": "Delete all messages"}, "tap(4)")
        memory.episodes.finish(failed.session_id, "refused")
        done = memory.episodes.start("Turn off Bluetooth", "127.0.0.1:5555", "fake")
        stats = {"new_tokens": 1, "mean_accepted": 2.0, "ms_per_token": 12.5}
        memory.episodes.add_step(done.session_id, {"app": "Settings", "title": "Connected devices",
                                                   "element": "Bluetooth"}, "tap(1)", (66,), stats)
        memory.episodes.add_step(done.session_id, {"app": "Settings", "title": "Connected devices"},
                                 'done("Task complete")')
        memory.episodes.finish(done.session_id, "done")
        return done.session_id

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("f10")
        await settle(pilot)
        screen = pilot.app.screen
        session = remember(pilot.app.runtime.memory)
        device = FakeDevice()
        device.bluetooth = False
        screen.post_message(DeviceStatus(connected=Connected(device, True, device.observe())))
        await settle(pilot, lambda app: app.screen.online)
        await screen.open_session(session)
        await pilot.press("ctrl+b")
        await settle(pilot, lambda app: "Task" in str(app.screen.query_one("#steps").children[0].render()))

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)
