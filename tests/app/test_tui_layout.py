"""Layout at the sizes users run (issue 24): the sessions list grows with the terminal, the agent's
device bar keeps every button whole at 120 columns, and episodes are listed with ✓/✗/stopped."""
from __future__ import annotations

from textual.widgets import Button

from app.tui.widgets.sessions import SessionItem, SessionList
from support.fakes import FakeEngine
from test_tui_agent import agent_mode, app_on
from support.tui_helpers import hash_memory, make_app, ready


async def sessions_width(tmp_path, size) -> int:
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.pause()
        return app.screen.query_one(SessionList).region.width


async def test_the_sessions_list_grows_with_the_terminal(tmp_path):
    assert await sessions_width(tmp_path / "a", (120, 40)) == 24
    wide = await sessions_width(tmp_path / "b", (200, 50))
    assert 30 <= wide <= 40, wide


async def test_the_device_bar_buttons_are_whole_at_120_columns(tmp_path):
    app = app_on(tmp_path, FakeEngine(["A"]))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await agent_mode(pilot)
        await pilot.pause()
        bar = screen.query_one("#device-bar")
        panels = screen.query_one("#panels")
        for button in bar.query(Button):
            label = str(button.label)
            assert button.content_region.width >= len(label), (label, button.content_region)
            # a gap before what follows: the panels' border right against a button cuts it
            assert button.region.right < panels.region.x, (label, button.region, panels.region)


async def test_episodes_are_listed_with_a_mark_for_their_outcome(tmp_path):
    app = app_on(tmp_path, FakeEngine(["A"]))
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await agent_mode(pilot)
        episodes = app.runtime.memory.episodes
        for task, outcome in (("Turn on Wi-Fi", "done"), ("Delete all", "refused"), ("Call mum", "stopped"),
                              ("Open maps", "step_limit")):
            episodes.finish(episodes.start(task, "127.0.0.1:5555", "fake").session_id, outcome)
        await screen.refresh_sessions()
        await pilot.pause()
        items = {item.session.title: str(item.query_one("Label").render()) for item in screen.query(SessionItem)}
        assert items == {"Turn on Wi-Fi": "✓ Turn on Wi-Fi", "Delete all": "✗ Delete all",
                         "Call mum": "stopped Call mum", "Open maps": "✗ Open maps"}, items
