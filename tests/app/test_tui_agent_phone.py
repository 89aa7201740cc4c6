"""Agent mode end to end on the real path: the "Virtual phone" button starts the real PhoneServer
and VirtualPhone in process (real TCP, real adb auth), the real Device/AdbConnection and UIAgent
drive it; only the model is scripted (fakes.FakeEngine, under the agent's real constraint).
One app for all of it (each app costs seconds of the fast tier): a closed port, an episode that
changes the phone, Esc mid-episode, the phone going away mid-episode."""
from __future__ import annotations

import socket

from textual.widgets import Input, Label

from app.tui.screens.agent import AgentScreen
from app.tui.widgets.phone_panel import PhonePanel
from app.tui.widgets.step_log import StepLog
from fakes import FakeEngine
from tui_helpers import SIZE, hash_memory, idle, make_app, ready, shown, wait


def log_text(screen) -> str:
    return "\n".join(str(line.render()) for line in screen.query_one(StepLog).query(".step-line"))


def status_text(screen) -> str:
    return str(screen.query_one("#device-status", Label).render())


async def test_the_agent_mode_on_the_virtual_phone(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]                         # free, and nobody listens on it
    # episode 1: Settings, done. Then Settings <-> launcher (back, tap) until Esc, and again until
    # the phone goes away (0.3 s a step: time to act mid-episode)
    engine = FakeEngine(["tap(1)", 'done("Settings is open")'] + ["back()", "tap(1)"] * 20, delay=0.3)
    app = make_app(engine, tmp_path, memory_factory=hash_memory, device=f"127.0.0.1:{closed}")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f10")
        screen = app.screen
        assert isinstance(screen, AgentScreen)

        # the address from the settings, where nothing listens: one line, no traceback
        assert screen.query_one("#address", Input).value == f"127.0.0.1:{closed}"
        await pilot.click("#connect")
        await wait(pilot, lambda: "✗ cannot" in status_text(screen), 20, "the error")
        assert f"cannot connect to 127.0.0.1:{closed}: connection refused" in status_text(screen)
        assert not screen.online and not screen.connecting and "\n" not in status_text(screen)

        await pilot.click("#virtual")
        await wait(pilot, lambda: screen.online, 30, "the virtual phone connected")
        status = status_text(screen)
        assert "connected to 127.0.0.1:" in status and "Pixel 7" in status and "virtual phone" in status
        phone = screen.link.phone
        assert phone.state()["foreground"]["package"] == "com.google.android.apps.nexuslauncher"
        assert "Home screen" in str(screen.query_one(PhonePanel).render())     # drawn at once

        # an episode: the model taps Settings, the phone's own state changes
        task = screen.query_one("#task", Input)
        task.focus()
        task.value = "Open Settings"                        # (typing costs ~0.2 s a key; tmux types)
        await pilot.press("enter")
        await wait(pilot, lambda: screen.request == 1 and idle(screen), 30, "the episode")
        assert phone.state()["foreground"]["package"] == "com.android.settings"
        log = log_text(screen)
        assert "step 1  Home screen" in log and "→ tap(1)  Settings" in log and "tok · " in log
        assert "step 2  Settings · Settings" in log and "■ done after 2 steps — Settings is open" in log
        assert ("tap(1)",) in engine.constraints[0].alternatives    # written under the screen's constraint
        panel = str(screen.query_one(PhonePanel).render())
        assert "step 2" in panel and "Network & internet" in panel and "Connected devices" in panel
        episode = app.runtime.memory.episodes.list()[0]
        assert (episode.outcome, [s["action"] for s in episode.steps]) == ("done", ["tap(1)", 'done("Settings is open")'])

        # Esc mid-episode (one at a time meanwhile)
        task.value = "Open Settings"
        await pilot.press("enter")
        await wait(pilot, lambda: "→ " in log_text(screen), 20, "a first action")
        task.value = "again"
        await pilot.press("enter")
        assert any("An episode is running" in m for m in shown(app))
        await pilot.press("escape")
        assert screen.active is None                        # the UI lets go at once
        await wait(pilot, lambda: idle(screen), 20, "the episode to stop")
        assert "■ stopped" in log_text(screen)
        assert app.runtime.memory.episodes.list()[0].outcome == "stopped"

        # the phone is switched off mid-episode
        task.value = "Open Settings"
        await pilot.press("enter")
        await wait(pilot, lambda: "→ " in log_text(screen), 20, "a first action")
        screen.link.server.stop()
        await wait(pilot, lambda: idle(screen), 40, "the episode to end")
        assert "■ disconnected after" in log_text(screen)
        assert "disconnected" in status_text(screen) and "disconnected" in str(screen.query_one(PhonePanel).render())
        assert app.runtime.memory.episodes.list()[0].outcome == "disconnected"
        n = screen.request
        task.value = "Open Settings"
        await pilot.press("enter")                          # refused until connected again
        await pilot.pause(0.1)
        assert screen.request == n and any("Not connected" in m for m in shown(app))
