"""Agent mode on a scripted phone (agent_fakes.FakeDevice) and the scripted engine, with the real
UIAgent and a real memory: the step log, the phone panel, the panels, past episodes, and the
confirmation (allow, deny, Esc, Ctrl+Q while it is open). The real phone path (virtual phone over
TCP), Esc mid-episode, a phone going away and a closed port are in test_tui_agent_phone.py."""
from __future__ import annotations

import time

from textual.widgets import Input, Label

from app.tui.device_link import Connected
from app.tui.screens.agent import AgentScreen, DeviceStatus
from app.tui.screens.confirm import ConfirmAction
from app.tui.widgets.phone_panel import PhonePanel, draw_screen, scale_box
from app.tui.widgets.sessions import SessionItem, SessionList
from app.tui.widgets.step_log import StepLog
from agent_fakes import FakeDevice
from fakes import FakeEngine
from tui_helpers import SIZE, hash_memory, idle, locations_in, make_app, ready, shown, wait

TASK = "Turn off Bluetooth"


def log_text(screen) -> str:
    return "\n".join(str(line.render()) for line in screen.query_one(StepLog).query(".step-line"))


def panel_text(screen) -> str:
    return str(screen.query_one(PhonePanel).render())


def status_text(screen) -> str:
    return str(screen.query_one("#device-status", Label).render())


async def agent_mode(pilot, device=None) -> AgentScreen:
    await ready(pilot)
    await pilot.press("f10")
    screen = pilot.app.screen
    assert isinstance(screen, AgentScreen)
    await wait(pilot, lambda: getattr(screen, "_frames", None) is not None, 10, "the agent screen")
    if device is not None:
        screen.post_message(DeviceStatus(connected=Connected(device, True)))
        await wait(pilot, lambda: screen.online, 10, "the phone connected")
    return screen


async def start(pilot, screen, task: str = TASK) -> None:
    """Enter a task in the task box (pasted: typing costs ~0.1 s a key; the tmux test types)."""
    n = screen.request
    box = screen.query_one("#task", Input)
    box.focus()
    box.value = task
    await pilot.press("enter")
    await wait(pilot, lambda: screen.request == n + 1, 10, "the episode to start")


def app_on(tmp_path, replies, delay=0.0, **settings):
    return make_app(FakeEngine(replies, delay=delay), tmp_path, memory_factory=hash_memory, **settings)


async def test_an_episode_drives_the_phone_and_every_panel_follows(tmp_path):
    device = FakeDevice()
    app = app_on(tmp_path, ["tap(1)", 'done("Bluetooth is off")'])
    async with app.run_test(size=SIZE) as pilot:
        screen = await agent_mode(pilot)
        await start_refused(pilot, screen)                   # no phone yet
        assert any("Not connected" in m for m in shown(app))
        await connect(pilot, screen, device)
        assert "connected to 127.0.0.1:5555" in status_text(screen)
        screen.query_one("#task", Input).value = ""
        await start(pilot, screen)
        await wait(pilot, lambda: idle(screen), 30, "the episode")
        assert device.state["bluetooth"] is False and device.commands == ["input tap 540 484"]
        log = log_text(screen)
        assert "Task Turn off Bluetooth" in log
        assert "step 1  Settings · Connected devices" in log and "step 2" in log
        assert "→ tap(1)  Bluetooth" in log and '→ done("Bluetooth is off")' in log
        assert "tok · " in log and "acc/step" in log and "ms/tok" in log      # the step's figures
        assert "■ done after 2 steps — Bluetooth is off" in log
        panel = panel_text(screen)
        assert "Settings · Connected" in panel and "step 2" in panel
        assert "Bluetooth" in panel and "○off" in panel        # the switch, now off
        # the engine's events fed the same panels as the other modes
        assert screen.metrics.steps and "steps)" in str(screen.query_one("#acc-figures").render())
        # the episode is an agent session in memory and in the sessions list...
        episodes = app.runtime.memory.episodes.list()
        assert [(e.task, e.outcome) for e in episodes] == [(TASK, "done")]
        assert screen.session_id == episodes[0].session_id
        sessions = screen.query_one(SessionList)
        await wait(pilot, lambda: len(sessions.children) == 1, 10, "the session listed")
        # ...which opens read-only
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: not log_text(screen), 10, "a new, empty log")
        sessions.display = True                               # (hidden at start under 150 columns)
        await pilot.pause()
        await pilot.click(SessionItem)
        await wait(pilot, lambda: "■ done" in log_text(screen), 10, "the episode shown again")
        log = log_text(screen)
        assert "Task Turn off Bluetooth" in log and "→ tap(1)  Bluetooth" in log
        assert "step 1  com.android.settings · Connected devices" in log and "tok · " in log


async def connect(pilot, screen, device) -> None:
    screen.post_message(DeviceStatus(connected=Connected(device, True)))
    await wait(pilot, lambda: screen.online, 10, "the phone connected")


async def start_refused(pilot, screen) -> None:
    n = screen.request
    box = screen.query_one("#task", Input)
    box.focus()
    box.value = TASK
    await pilot.press("enter")
    await pilot.pause(0.1)
    assert screen.request == n and screen.query_one("#task", Input).value == TASK     # kept


async def test_confirmation_allow_deny_and_escape(tmp_path):
    device = FakeDevice()
    app = app_on(tmp_path, ["tap(1)", 'done("deleted")', "tap(1)"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await agent_mode(pilot, device)

        async def delete(answer: str) -> None:
            device.deleted = False
            await start(pilot, screen, "Delete all messages")
            await wait(pilot, lambda: isinstance(app.screen, ConfirmAction), 20, "the confirmation")
            assert "Delete all messages" in str(app.screen.query_one("#question").render())
            await pilot.press(answer)
            await wait(pilot, lambda: idle(screen), 20)
            assert app.screen is screen

        await delete("y")
        assert device.deleted and "■ done after 2 steps" in log_text(screen)
        await delete("n")
        assert not device.deleted
        assert "■ refused after 1 step — Not allowed: tap(1) presses" in log_text(screen)
        await delete("escape")                       # Esc in the modal denies
        assert not device.deleted and "■ refused" in log_text(screen)

        # Ctrl+Q with the modal open: the waiting agent is answered "no", the app quits at once
        await start(pilot, screen, "Delete all messages")
        await wait(pilot, lambda: isinstance(app.screen, ConfirmAction), 20, "the confirmation")
        job = screen.jobs[screen.episode]
        t0 = time.monotonic()
        await pilot.press("ctrl+q")
        await wait(pilot, lambda: job.done.is_set(), 5, "the episode to end")
        assert time.monotonic() - t0 < 3
    assert not device.deleted
    memory = hash_memory(locations_in(tmp_path), FakeEngine())
    try:
        assert [e.outcome for e in memory.episodes.list()] == ["refused", "refused", "refused", "done"]
    finally:
        memory.close()


def test_the_phone_is_drawn_to_scale():
    device = FakeDevice()
    screen = device.observe()
    assert scale_box((0, 400, 1080, 568), (1080, 2400), 30, 24) == (4, 0, 6, 30)
    assert scale_box((0, 2500, 1080, 2600), (1080, 2400), 30, 24) is None        # off screen
    lines = [line.plain for line in draw_screen(screen, 30, 24, highlight=screen.elements[0])]
    assert len(lines) == 24 and all(len(line) == 30 for line in lines)
    assert lines[4].startswith("Bluetooth") and lines[4].endswith("●on")
    assert lines[6].startswith("Wi-Fi") and lines[6].endswith("○off")
    assert lines[21][2:].startswith("Delete all messages")      # x=63 px: two cells in
    lit = draw_screen(screen, 30, 24, highlight=screen.elements[0])[4]
    assert any("e0b040" in str(span.style) for span in lit.spans)                # highlighted
    assert len(draw_screen(screen, 12, 10)[4].plain) == 12                      # clipped, never wider
