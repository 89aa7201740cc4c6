"""Agent mode: the UI agent drives a phone (a real one over adb, or the virtual phone).

A device bar (address, Connect, Virtual phone, Explore, connection status), the apps known, the
task box, the step log, the live phone panel and the base screen's acceptance and latency panels.
An episode is one job: the agent's events reach ``prepare_event`` frame by frame like any mode's;
the engine's events of each step feed the panels through the base screen's path. An episode is
stored by the agent as an ``agent`` session, so the sessions list shows past episodes with their
outcome (read-only here). Explore (``agent_explore``) is a job too, with its own progress bar.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace
from typing import Callable

from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Footer, Input, Label

from agents.common import stats_of
from agents.events import Acted, EpisodeEnd, Observed
from agents.ui.prompt import app_name
from engine.events import Done
from memory import ResponseStats

from ...phone_agent import agent_options
from ..device_link import Connected, DeviceLink, first_look
from ..jobs import Job, one_line
from ..keys import bind
from ..widgets.explore_bar import ExploreBar
from ..widgets.panels import Panels
from ..widgets.phone_panel import PhonePanel
from ..widgets.sessions import SessionList
from ..widgets.step_log import StepLog
from .agent_explore import ExploreActions
from .base import ModeBar, ModeScreen
from .confirm import AskUser, ConfirmAction, wait_for_answer
from .session_actions import memory_action

INDEX = re.compile(r"^(?:tap|long_press|type)\((\d+)")


@dataclass(frozen=True)
class PhoneNow:
    """The phone as an episode left it (None: it could not be read)."""
    screen: object


@dataclass
class DeviceStatus(Message):
    """From the connecting thread: a status line, the device once connected, or the error."""
    text: str = ""
    connected: Connected | None = None
    error: str = ""


class AgentScreen(ExploreActions, ModeScreen):
    MODE = "agent"
    DEFAULT_TITLE = "Episode"
    NARROW = 150      # the step log and the phone need the room more than past episodes (Ctrl+B)
    BINDINGS = [replace(bind("chat.cancel", "cancel", priority=True), description="Stop"),
                bind("agent.explore", "explore", priority=True)]

    def __init__(self) -> None:
        super().__init__()
        self.link: DeviceLink | None = None
        self.online = False               # the device answered last time we asked
        self.connecting = False
        self.closed = threading.Event()   # set on unmount: a waiting confirmation is denied
        self.episode: int | None = None   # the request id of the last episode
        self.step_done: Done | None = None
        self.shown: tuple = ()

    # -- layout -------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ModeBar(id="modebar")
        with Horizontal(id="body"):
            yield SessionList(id="sessions")
            with Vertical(id="main"):
                with Horizontal(id="device-bar"):
                    yield Input(self.app.settings.device, placeholder="HOST:PORT", id="address")  # type: ignore[attr-defined]
                    yield Button("Connect", id="connect")
                    yield Button("Virtual phone", id="virtual")
                    yield Button("Explore", id="explore")
                yield Label("", id="device-status")
                yield Label("", id="known-apps")
                yield ExploreBar(id="explore-bar")
                with Horizontal(id="agent-body"):
                    yield StepLog(id="steps")
                    yield PhonePanel(id="phone")
                yield Input(placeholder="Task for the phone, e.g. Turn off Bluetooth (Enter starts)", id="task")
            yield Panels(id="panels")
        yield Footer()

    def focus_input(self) -> None:
        self.query_one("#task", Input).focus()

    def on_mount(self) -> None:        # before ModeScreen.on_mount (Textual calls both)
        self.link = DeviceLink(self.app.locs)  # type: ignore[attr-defined]
        self.status("not connected: Connect to a phone's HOST:PORT, or start the Virtual phone")

    def on_unmount(self) -> None:
        self.closed.set()
        self.cancel_all()
        if self.link is not None:
            self.link.close()

    def status(self, text: str) -> None:
        self.query_one("#device-status", Label).update(text)

    # -- the device ---------------------------------------------------------------------------------
    @on(Button.Pressed, "#connect")
    @on(Input.Submitted, "#address")
    def action_connect(self) -> None:
        address = self.query_one("#address", Input).value.strip()
        self._connect_in_thread(f"connecting to {escape(address)}…",
                                lambda on_auth: self.link.connect(address, on_auth))

    @on(Button.Pressed, "#explore")
    async def _explore_pressed(self) -> None:
        await self.action_explore()

    @on(Button.Pressed, "#virtual")
    def action_virtual_phone(self) -> None:
        self._connect_in_thread("starting the virtual phone…", lambda on_auth: self.link.start_virtual(on_auth))

    def _connect_in_thread(self, saying: str, connect: Callable) -> None:
        if self.jobs:
            self.notify("An episode or an exploration is running: Esc stops it first.", severity="warning")
            return
        if self.connecting:
            self.notify("Already connecting…", severity="warning")
            return
        self.connecting = True
        self.status(saying)

        def on_auth() -> None:
            self.post_message(DeviceStatus("[yellow]allow hexa's key on the phone's screen "
                                           "(“Allow USB debugging?”)…[/yellow]"))

        def run() -> None:   # a daemon thread: a phone that never answers cannot hold up quitting
            try:
                result = DeviceStatus(connected=connect(on_auth))
            except Exception as exc:   # every failure is one line in the status, never a traceback
                result = DeviceStatus(error=one_line(exc))
            try:
                posted = self.post_message(result)
            except RuntimeError:      # the app's loop is gone
                posted = False
            if not posted and result.connected is not None:    # closed meanwhile: let it go
                result.connected.device.close()
        threading.Thread(target=run, name="hexa-connect", daemon=True).start()

    def on_device_status(self, message: DeviceStatus) -> None:
        if message.text:
            self.status(message.text)
            return
        self.connecting = False
        if message.error:       # not connected, as the status says (until Connect)
            self.online = False
            self.status(f"[red]✗ {escape(message.error)}[/red]")
            self.notify(message.error, title="Phone", severity="error", timeout=8)
        elif message.connected is not None:
            self.link.use(message.connected)
            self.online = True
            self.query_one("#address", Input).value = message.connected.device.address
            panel = self.query_one(PhonePanel)
            panel.clear()
            panel.apps = dict(message.connected.device.apps)
            if message.connected.screen is not None:
                panel.show(message.connected.screen, 0)
            else:
                panel.set_note("Connected: its screen shows at the first step.")
            self.status(f"[green]●[/green] connected to {escape(message.connected.describe())}")

    # -- an episode ---------------------------------------------------------------------------------
    @on(Input.Submitted, "#task")
    async def _task(self, event: Input.Submitted) -> None:
        await self.run_task(event.value)

    async def run_task(self, text: str) -> bool:
        """Start an episode (the task box is emptied); False, saying why, when it cannot start.
        Typed while the model loads, it starts when the model is ready."""
        task = " ".join(text.split())
        if not task:
            return False
        if not self.ready(retry=lambda: self.run_task(text)):
            return False
        if self.jobs and all(job.cancel.is_set() for job in self.jobs.values()):
            # Esc was pressed and the job ends after the action under way (a second or so): a task
            # typed meanwhile starts then, instead of being refused and left in the box
            what = "The exploration" if self.exploring is not None else "The last episode"
            self.deferred = lambda: self.run_task(text)
            self.notify(f"{what} is stopping: this task starts when it has.")
            return False
        if self.exploring is not None:
            self.notify("Exploring the phone: Esc stops it first (what it learned is kept).", severity="warning")
            return False
        if self.busy or self.jobs:
            self.notify("An episode is running: Esc stops it.", severity="warning")
            return False
        link = self.link
        if link is None or link.device is None or not self.online:
            self.notify("Not connected: Connect to a phone, or start the Virtual phone.", severity="error")
            return False
        from agents.ui.agent import UIAgent

        engine, memory, device = self.runtime.engine, self.memory, link.device
        # the app's settings and its knowledge of the phone, never read by the agent itself
        options = agent_options(self.app.settings, virtual=link.current.virtual)  # type: ignore[attr-defined]

        def events(job: Job):
            def confirm(question: str) -> bool:
                return wait_for_answer(question, self.post_message,
                                       lambda: job.cancel.is_set() or self.closed.is_set())
            yield from UIAgent(engine, memory, device, options, confirm=confirm).run(task, job.cancel)
            yield PhoneNow(first_look(device))     # the agent's last read came before its last action

        self.session_id, self.step_done, self.shown = None, None, ()
        self.query_one("#task", Input).clear()
        log = self.query_one(StepLog)
        await log.clear()
        await log.task(task)
        if self.known == []:
            await log.line(f"No app explored yet: Explore ({self.app.key_label('agent.explore')}) first "  # type: ignore[attr-defined]
                           "teaches the agent the phone's apps (it works, worse, without).", "step-note")
        self.episode = self.start(events, None).rid
        return True

    def on_ask_user(self, message: AskUser) -> None:
        if not message.ask.answered.is_set():
            self.app.push_screen(ConfirmAction(message.ask))

    async def handle(self, rid: int, event) -> None:
        if isinstance(event, Done) and rid == self.active:
            # one Done per step: the episode goes on (the base screen would end the request)
            self.metrics.feed(event)
            self._dirty = True
            self.step_done = event
            return
        await super().handle(rid, event)

    async def prepare_event(self, rid: int, event) -> None:
        """The episode's own events, drawn even after Esc (its end says it stopped); the
        exploration's."""
        if rid == self.exploring and rid is not None and not self.closed.is_set():
            await self.explore_event(event)
            return
        if rid != self.episode or self.closed.is_set() or self.app.quitting:  # type: ignore[attr-defined]
            return                      # (quitting: the widgets may be going already)
        log, panel = self.query_one(StepLog), self.query_one(PhonePanel)
        if isinstance(event, Observed):
            self.shown = event.shown
            screen = event.screen
            panel.show(screen, event.step)
            await log.observed(event.step, app_name(screen.package, panel.apps), screen.title)
            if event.step == 1:
                await self.refresh_sessions()          # the agent stored the episode's session
        elif isinstance(event, Acted):
            m = INDEX.match(event.action)
            index = int(m[1]) if m else 0
            element = self.shown[index - 1] if 0 < index <= len(self.shown) else None
            panel.acted(element, event.action, event.element, event.error)
            stats = _stats(self.step_done)
            self.step_done = None
            await log.acted(event.action, event.element, stats, event.error)
        elif isinstance(event, PhoneNow):
            if event.screen is not None and self.online:
                panel.show(event.screen, panel.step)
        elif isinstance(event, EpisodeEnd):
            await log.ended(event.outcome, event.steps, event.message, event.success)
            if event.outcome == "disconnected":
                self.disconnected(event.message)
            self.session_id = event.session_id
            await self.refresh_sessions()

    def disconnected(self, message: str) -> None:
        """The phone stopped answering: not connected, as the status says, until Connect."""
        self.online = False
        self.status(f"[red]✗ disconnected: {escape(message)}[/red] (Connect again)")
        self.query_one(PhonePanel).set_note("disconnected")

    async def job_finished(self, rid: int, error: str | None) -> None:
        await super().job_finished(rid, error)
        if rid == self.exploring:
            await self.explore_finished(error)
        elif error and rid == self.episode:
            await self.query_one(StepLog).error(error)

    def cancelled(self, rid: int) -> None:
        if rid == self.exploring:
            self.explore_cancelled()
        else:
            self.notify("Stopping the episode…")

    # -- past episodes ----------------------------------------------------------------------------
    async def refresh_sessions(self) -> None:
        """Past episodes with their outcome; the apps known may have grown too (an episode adds
        the screens it finds to the app's graph)."""
        if self.runtime is None:
            return
        sessions = await self.mem(self.memory.list_sessions, mode=self.MODE)
        outcomes = {e.session_id: e.outcome for e in await self.mem(self.memory.episodes.list)}
        await self.query_one(SessionList).show(sessions, self.session_id, outcomes)
        await self.refresh_known()

    @memory_action
    async def open_session(self, session_id) -> None:
        messages = await self.mem(self.memory.messages, session_id)
        episode = await self.mem(self.memory.episodes.get, session_id)
        self.session_id = session_id
        self.session_opened(session_id)
        await self.query_one(StepLog).replay(messages, episode)
        await self.refresh_sessions()

    def session_opened(self, session_id) -> None:
        """Another session (or a new one) in the log: a running episode no longer writes there."""
        self.episode = None

    def palette_commands(self) -> list[tuple[str, str, Callable]]:
        return super().palette_commands() + [
            ("Connect to the phone", "Connect to the address in the device bar", self.action_connect),
            ("Start the virtual phone", "An Android phone emulated in this process", self.action_virtual_phone),
            ("Explore the phone's apps", "Learn the connected phone's apps (what the agent plans with)",
             self.action_explore),
        ]


def _stats(done: Done | None) -> ResponseStats | None:
    return None if done is None else stats_of(done)
