"""Snapshots of the places issue 24 fixed, at 120×40 (the size they broke at): the Device panel
with a long model name and large memory parts, and the summarizer's file row and status after a
summary stopped at the token limit. Stable as test_tui_snapshots.py's (fixed paths and figures)."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from app.settings import Loaded, Settings
from app.tui.app import HexaApp
from engine.events import Done
from support.fakes import FakeEngine
from test_tui_snapshots import settle
from support.tui_helpers import hash_memory, idle, locations_in

SIZE = (120, 40)
ROOT = Path("/tmp/hexa-snapshot-edges")


class BigEngine(FakeEngine):
    model_name = "SmolLM2-1.7B-Instruct-long-name.Q4_K_M"

    def resident_bytes(self) -> dict[str, int]:
        return {"weights": 1_123_000_000, "kept KV": 273_000_000}


class CutEngine(FakeEngine):
    def generate(self, prompt, **kw):
        for event in super().generate(prompt, **kw):
            yield dataclasses.replace(event, stop_reason="max_tokens") if isinstance(event, Done) else event


def make_app(engine) -> HexaApp:
    shutil.rmtree(ROOT, ignore_errors=True)
    locs = locations_in(ROOT)
    loaded = Loaded(Settings(retrieval=False, history_drafting=False), locs.config_file)
    return HexaApp(loaded, locs, engine_factory=lambda s, l, p: engine, memory_factory=hash_memory,
                   rss_probe=lambda: 2345.0)


def test_panels_at_120x40(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press(*"hello", "enter")
        await settle(pilot, lambda app: app.screen.request == 1 and idle(app.screen))
        pilot.app._probe()
        await settle(pilot)

    assert snap_compare(make_app(BigEngine()), terminal_size=SIZE, run_before=run_before)


def test_summary_cut_at_the_token_limit_at_120x40(snap_compare):
    doc = ROOT.parent / "hexa-snapshot-edges-report.txt"
    doc.write_text("The pumps were checked on Monday and the valves on Tuesday.\n" * 4)

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("f3")
        await settle(pilot)
        screen = pilot.app.screen
        screen.summarize([doc])
        await settle(pilot, lambda app: screen.request == 1 and idle(screen))

    assert snap_compare(make_app(CutEngine("The pumps and the valves were checked")), terminal_size=SIZE,
                        run_before=run_before)
