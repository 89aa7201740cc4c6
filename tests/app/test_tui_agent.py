"""Agent mode on a scripted phone (agent_fakes.FakeDevice) with the real UIAgent and a real memory
(the scripted engine only answers the model's letter when the agent asks it): the step log, the
phone panel, the panels, past episodes with their outcome, and the confirmation (allow, deny, Esc,
Ctrl+Q while it is open). The real phone path (virtual phone over TCP), Explore, Esc mid-episode,
a phone going away and a closed port are in test_tui_agent_phone.py."""
from __future__ import annotations

import re
import time

from textual.widgets import Input, Label

from app.tui.device_link import Connected
from app.tui.screens.agent import AgentScreen, DeviceStatus
from app.tui.screens.confirm import ConfirmAction
from app.tui.widgets.phone_panel import PhonePanel, draw_screen, scale_box
from app.tui.widgets.sessions import SessionItem, SessionList
from app.tui.widgets.step_log import StepLog
from support.agent_fakes import FakeDevice
from support.fakes import FakeEngine
from support.tui_helpers import SIZE, hash_memory, idle, locations_in, make_app, ready, shown, wait

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


def app_on(tmp_path, engine, **settings):
    return make_app(engine, tmp_path, memory_factory=hash_memory, **settings)


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


def acted(screen) -> list[str]:
    """The actions in the log, as written there ("tap(1)", ...)."""
    return re.findall(r"^\s*→ (.+?)(?:  |$)", log_text(screen), re.M)


def known_text(screen) -> str:
    return str(screen.query_one("#known-apps", Label).render())


def item_text(item) -> str:
    return str(item.query_one(Label).render())


async def test_an_episode_drives_the_phone_and_every_panel_follows(tmp_path):
    """The real UIAgent on the scripted phone: what the log, the phone panel and the sessions list
    show is what the agent did and stored, step for step."""
    device = FakeDevice()
    app = app_on(tmp_path, FakeEngine(["A"]))      # the model's letter, whenever the agent asks
    async with app.run_test(size=SIZE) as pilot:
        screen = await agent_mode(pilot)
        await start_refused(pilot, screen)                   # no phone yet
        assert any("Not connected" in m for m in shown(app))
        await connect(pilot, screen, device)
        assert "connected to 127.0.0.1:5555" in status_text(screen)
        await wait(pilot, lambda: "no app explored yet" in known_text(screen), 10, "the apps known")
        screen.query_one("#task", Input).value = ""
        await start(pilot, screen)
        await wait(pilot, lambda: idle(screen), 30, "the episode")
        [listed] = app.runtime.memory.episodes.list()
        episode = app.runtime.memory.episodes.get(listed.session_id)
        assert episode.task == TASK and episode.outcome != "running"
        log = log_text(screen)
        assert "Task Turn off Bluetooth" in log and "No app explored yet" in log
        assert "step 1  Settings · Connected devices" in log
        # each action the agent stored is in the log, in order, and every one but done() reached the phone
        actions = [m.text for m in app.runtime.memory.messages(episode.session_id) if m.role == "assistant"]
        assert actions and acted(screen) == actions
        assert len(device.commands) >= len([a for a in actions if not a.startswith("done")])
        steps = len(re.findall(r"^step \d+  ", log, re.M))
        assert re.search(rf"■ {episode.outcome} after \d+ steps?", log)
        panel = panel_text(screen)
        assert "Settings · Connected" in panel and f"step {steps}" in panel
        assert ("●on" if device.bluetooth else "○off") in panel            # the switch as the phone has it
        # the episode is an agent session, listed with its outcome...
        assert screen.session_id == episode.session_id
        sessions = screen.query_one(SessionList)
        await wait(pilot, lambda: len(sessions.children) == 1, 10, "the session listed")
        item = sessions.query_one(SessionItem)
        assert item.outcome == episode.outcome
        mark = {"done": "✓", "stopped": "stopped"}.get(episode.outcome, "✗")
        assert item_text(item) == f"{mark} {TASK}" and item.tooltip == episode.outcome.replace("_", " ")
        # ...which opens read-only
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: not log_text(screen), 10, "a new, empty log")
        sessions.display = True                               # (hidden at start under 150 columns)
        await pilot.pause()
        await pilot.click(SessionItem)
        await wait(pilot, lambda: "■ " in log_text(screen), 10, "the episode shown again")
        assert "Task Turn off Bluetooth" in log_text(screen) and f"■ {episode.outcome}" in log_text(screen)
        assert acted(screen) == actions


async def test_a_steps_engine_figures_are_shown_under_its_action(tmp_path):
    """The screen's side of the contract, fed the events the agent yields when it asks the model
    (Observed, the engine's Done, Acted, EpisodeEnd) through the same job path: whether the agent
    asks is its own business (the episode above may never need to)."""
    from agents.events import Acted, EpisodeEnd, Observed
    from engine.events import Done

    device = FakeDevice()
    app = app_on(tmp_path, FakeEngine(["A"]))
    async with app.run_test(size=SIZE) as pilot:
        screen = await agent_mode(pilot, device)
        first = device.observe()
        done = Done("eos", "B", (66,), 120, 1, ttft_ms=30.0, prefill_ms=20.0, prefill_tok_s=6000.0,
                    decode_ms=10.0, decode_tok_s=100.0, ms_per_token=10.0, steps=1, mean_accepted=2.0)
        events = [Observed(1, first, (first.elements[0], first.elements[1])), done,
                  Acted(1, "tap(2)", "Wi-Fi", "input tap 540 652"), Observed(2, first, ()),
                  Acted(2, "back()", "", error="the phone answered 'Error'"),
                  EpisodeEnd(7, "no_plan", 2, "No known way to do this from here")]
        screen.episode = screen.start(lambda job: iter(events), None).rid
        await wait(pilot, lambda: idle(screen), 10, "the events drawn")
        log = log_text(screen)
        assert "→ tap(2)  Wi-Fi\n    1 tok · 2.00 acc/step · 10.0 ms/tok" in log
        assert "→ back()\n    refused by the phone: the phone answered 'Error'" in log   # not asked: no figures
        assert "■ no_plan after 2 steps — No known way to do this from here" in log
        assert "→ back()  (refused)" in panel_text(screen)                     # the last action


async def test_confirmation_allow_deny_and_escape(tmp_path):
    device = FakeDevice()
    app = app_on(tmp_path, FakeEngine(["A"]))
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
        assert device.deleted and "Delete all messages" in log_text(screen)
        await delete("n")
        assert not device.deleted
        assert re.search(r"■ refused after 1 step — Not allowed: .*Delete all messages", log_text(screen))
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
        outcomes = [e.outcome for e in memory.episodes.list()]     # most recent first
        assert outcomes[:3] == ["refused"] * 3 and outcomes[3] != "refused", outcomes
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
