"""Agent mode end to end on the real path: the "Virtual phone" button starts the real PhoneServer
and VirtualPhone in process (real TCP, real adb auth), the real Device/AdbConnection, Explorer and
UIAgent drive it; only the model's letter is scripted (fakes.FakeEngine), when the agent asks it.
One app for all of it (each app costs seconds of the fast tier): a closed port, Explore with its
progress, Esc and a second run going on where the first stopped, an episode, Esc mid-episode and a
task typed while it stops, the phone going away mid-episode."""
from __future__ import annotations

import re
import socket
import threading
import time

from textual.widgets import Input, Label, ProgressBar

from app.tui.screens.agent import AgentScreen
from app.tui.widgets.explore_bar import ExploreBar
from app.tui.widgets.phone_panel import PhonePanel
from app.tui.widgets.sessions import SessionItem, SessionList
from app.tui.widgets.step_log import StepLog
from support.fakes import FakeEngine
from support.tui_helpers import SIZE, hash_memory, idle, make_app, palette_highlight, ready, shown, wait

SETTINGS = "com.android.settings"
MULTI_STEP = "Set an alarm for 6:45 AM labelled Gym in the Clock app"


def log_text(screen) -> str:
    return "\n".join(str(line.render()) for line in screen.query_one(StepLog).query(".step-line"))


def status_text(screen) -> str:
    return str(screen.query_one("#device-status", Label).render())


def known_text(screen) -> str:
    return str(screen.query_one("#known-apps", Label).render())


def bar_text(screen) -> str:
    return screen.query_one(ExploreBar).text


async def run_task(pilot, screen, text: str) -> None:
    n = screen.request
    task = screen.query_one("#task", Input)
    task.focus()
    task.value = text                        # (typing costs ~0.2 s a key; tmux types)
    await pilot.press("enter")
    await wait(pilot, lambda: screen.request == n + 1, 10, "the episode to start")


def paced(device, seconds: float) -> threading.Event:
    """Each screen read takes ``seconds`` (a real phone's dump takes about that): time to act
    mid-episode. The event is set while a read waits: a job stopped then is still stopping."""
    observe = device.observe
    reading = threading.Event()

    def slow():
        reading.set()
        time.sleep(seconds)
        reading.clear()
        return observe()
    device.observe = slow
    return reading


async def test_the_agent_mode_on_the_virtual_phone(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]                         # free, and nobody listens on it
    engine = FakeEngine(["A"], delay=0.05)
    app = make_app(engine, tmp_path, memory_factory=hash_memory, device=f"127.0.0.1:{closed}", agent_steps=30)
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
        await pilot.press("ctrl+g")                          # Explore needs a phone
        assert any("Not connected" in m for m in shown(app)) and screen.exploring is None

        await pilot.click("#virtual")
        await wait(pilot, lambda: screen.online, 30, "the virtual phone connected")
        status = status_text(screen)
        assert "connected to 127.0.0.1:" in status and "Pixel 7" in status and "virtual phone" in status
        assert screen.link.current.virtual                  # PhoneControl says so: no settling time
        phone = screen.link.phone
        assert phone.state()["foreground"]["package"] == "com.google.android.apps.nexuslauncher"
        assert "Home screen" in str(screen.query_one(PhonePanel).render())     # drawn at once
        await wait(pilot, lambda: "no app explored yet" in known_text(screen), 10, "the apps known")

        # Explore (the button): a progress bar while it runs, Esc stops it, what it learned is kept.
        # Paced as a real phone's screen reads are: the virtual one over TCP explores Settings' 300
        # actions in ~1 s, before Esc could reach it
        paced(screen.link.device, 0.05)
        await pilot.click("#explore")
        bar = screen.query_one(ExploreBar)
        await wait(pilot, lambda: re.search(r"Settings: ([1-9]\d*)/300 actions", bar_text(screen)), 30,
                   "exploring Settings")
        assert bar.has_class("running") and bar_text(screen).startswith("app 1/10 · Settings: ")
        assert "screens" in bar_text(screen) and "edges" in bar_text(screen)
        assert screen.query_one(ProgressBar).progress > 0
        await pilot.press("enter")                           # the button again: one at a time
        assert any("An exploration is running: Esc stops it first" in m for m in shown(app))
        task = screen.query_one("#task", Input)
        task.focus()
        task.value = "Open Settings"
        await pilot.press("enter")                           # no episode meanwhile
        assert any("Exploring the phone: Esc stops it first" in m for m in shown(app)) and screen.request == 1
        await pilot.press("escape")
        await wait(pilot, lambda: idle(screen), 30, "the exploration to stop")
        log = log_text(screen)
        assert re.search(r"com\.android\.settings: \d+ screens, \d+ edges .* — stopped \(run it again", log), log
        assert not bar.has_class("running") and screen.exploring is None
        [row] = app.runtime.memory.ui_graphs.apps()          # Settings only, and what it learned
        assert row["package"] == SETTINGS and row["screens"] > 0 and row["info"]["actions"] > 0
        assert f"explored: Settings ({row['screens']} screens)" in known_text(screen)

        # again (the palette's entry, a small budget): Settings goes on where it stopped, then the rest
        screen.explore_budget = 3
        await pilot.press("ctrl+p")
        await pilot.press(*"Explore the phone")
        await wait(pilot, lambda: "Explore the phone's apps" in palette_highlight(app), 10, "the palette's entry")
        await pilot.press("enter")
        await wait(pilot, lambda: screen.exploring is not None, 10, "the exploration to start")
        await wait(pilot, lambda: idle(screen), 60, "the exploration")
        summaries = re.findall(r"^(\S+): \d+ screens, \d+ edges", log_text(screen), re.M)
        assert summaries == list(screen.link.device.apps.values())
        rows = {r["package"]: r for r in app.runtime.memory.ui_graphs.apps()}
        assert rows[SETTINGS]["info"]["actions"] > row["info"]["actions"]
        assert set(rows) == set(screen.link.device.apps.values())
        assert known_text(screen).startswith("explored: ") and all(f"{name} (" in known_text(screen) for name in screen.link.device.apps)

        # an episode: what the log shows is what the agent stored
        await run_task(pilot, screen, "Turn on airplane mode")
        await wait(pilot, lambda: idle(screen), 60, "the episode")
        episode = app.runtime.memory.episodes.list()[0]
        actions = [m.text for m in app.runtime.memory.messages(episode.session_id) if m.role == "assistant"]
        log = log_text(screen)
        assert actions and re.findall(r"^\s*→ (.+?)(?:  |$)", log, re.M) == actions
        assert "step 1  Home screen" in log and f"■ {episode.outcome} after" in log
        assert "No app explored yet" not in log
        assert phone.state()["visited"]                      # the phone's own state moved
        # the panel shows the phone as the episode left it (read again after the last action)
        def looks(s) -> tuple:
            return s.package, s.title, [(e.label, e.checked, e.bounds) for e in s.elements]
        assert looks(screen.query_one(PhonePanel).phone_screen) == looks(screen.link.device.observe())

        # Esc mid-episode (one at a time meanwhile; the sessions list says how it ended)
        reading = paced(screen.link.device, 0.3)
        await run_task(pilot, screen, MULTI_STEP)
        await wait(pilot, lambda: "→ " in log_text(screen), 20, "a first action")
        screen.query_one("#task", Input).value = "again"
        await pilot.press("enter")
        assert any("An episode is running" in m for m in shown(app))
        await pilot.press("ctrl+g")
        assert any("An episode is running: Esc stops it first" in m for m in shown(app))
        # Esc while the episode reads the screen: it stops once the read is back (stopped while the
        # model answered, it could be gone before the next key, and the typed task start at once)
        await wait(pilot, reading.is_set, 20, "a screen read")
        await pilot.press("escape")
        assert screen.active is None                        # the UI lets go at once
        n = screen.request
        screen.query_one("#task", Input).value = "Open Settings"
        await pilot.press("enter")                          # typed while it stops: it starts then
        assert screen.jobs and screen.request == n          # (the paced phone: still stopping)
        assert any("The last episode is stopping: this task starts when it has" in m for m in shown(app))
        await wait(pilot, lambda: screen.request == n + 1, 20, "the typed task to start")
        await wait(pilot, lambda: idle(screen), 60, "the typed task's episode")
        assert "Open Settings" in log_text(screen) and "■ stopped" not in log_text(screen)
        stopped, typed = app.runtime.memory.episodes.list()[1], app.runtime.memory.episodes.list()[0]
        assert (stopped.task, stopped.outcome) == (MULTI_STEP, "stopped") and typed.task == "Open Settings"
        sessions = screen.query_one(SessionList)
        await wait(pilot, lambda: len(sessions.children) == 3, 10, "the three episodes listed")
        assert [i.outcome for i in sessions.query(SessionItem)][1:] == ["stopped", episode.outcome]

        # the phone is switched off mid-episode
        await run_task(pilot, screen, MULTI_STEP)
        await wait(pilot, lambda: "→ " in log_text(screen), 20, "a first action")
        screen.link.server.stop()
        await wait(pilot, lambda: idle(screen), 40, "the episode to end")
        assert "■ disconnected after" in log_text(screen)
        assert "disconnected" in status_text(screen) and "disconnected" in str(screen.query_one(PhonePanel).render())
        assert app.runtime.memory.episodes.list()[0].outcome == "disconnected"
        n = screen.request
        screen.query_one("#task", Input).value = "Open Settings"
        await pilot.press("enter")                          # refused until connected again
        await pilot.pause(0.1)
        assert screen.request == n and any("Not connected" in m for m in shown(app))


def test_explore_events_say_when_the_phone_goes_away(tmp_path, hash_embedder):
    """Explore's job on the real phone path: progress after every edge, and a phone unplugged
    mid-exploration is one last event (the app marks it disconnected), the graph kept so far."""
    from agents.phone.device.phone import VirtualPhone
    from agents.phone.adb.server import PhoneServer
    from agents.ui.adb import AdbConnection
    from agents.ui.device import Device
    from app.tui.explore_job import ExploreProgress, PhoneGone, explore_events
    from memory import Memory

    server = PhoneServer(VirtualPhone(), host="127.0.0.1", port=0, auth=False)
    device = Device(AdbConnection(f"127.0.0.1:{server.start()}", tmp_path / "keys", timeout_s=2.0))
    device.connect()
    with Memory.open(tmp_path / "mem", embedder=hash_embedder) as memory:
        events = []
        for event in explore_events(device, memory, [("Settings", SETTINGS)], 200, threading.Event()):
            events.append(event)
            if isinstance(event, ExploreProgress) and event.report.edges >= 2:
                server.stop()
        assert isinstance(events[-1], PhoneGone) and "127.0.0.1:" in events[-1].message
        progress = [e.report.edges for e in events if isinstance(e, ExploreProgress)]
        assert progress and progress == sorted(progress)
        assert memory.ui_graphs.apps()[0]["edges"] >= 2
    device.close()
