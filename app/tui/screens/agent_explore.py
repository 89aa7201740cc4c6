"""The agent mode's Explore: learn the connected phone's apps into the memory's app graphs (what the
agent plans with), as a job with a progress bar; Esc stops it after the action under way and keeps
what it learned (exploring again goes on where it stopped). Also the line saying which apps are
known, refreshed whenever that can change.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Label

from ...phone_agent import EXPLORE_BUDGET, known_apps, known_line, summary_text
from ..explore_job import AppExplored, ExploreProgress, PhoneGone, explore_events
from ..jobs import Job
from ..widgets.explore_bar import ExploreBar
from ..widgets.step_log import StepLog
from .session_actions import MemoryCallFailed


class ExploreActions:
    """Mixed into ``AgentScreen`` (which provides ``link``, ``online``, ``start``, ``mem``...)."""

    exploring: int | None = None      # the request id of the exploration under way
    explore_budget = EXPLORE_BUDGET
    known: list[dict] | None = None   # the apps the memory has graphs of (None: not read yet)

    async def action_explore(self) -> None:
        if not self.ready():
            return
        if self.jobs:
            what = "An exploration" if self.exploring in self.jobs else "An episode"
            self.notify(f"{what} is running: Esc stops it first.", severity="warning")
            return
        link = self.link
        if link is None or link.device is None or not self.online:
            self.notify("Not connected: Connect to a phone, or start the Virtual phone.", severity="error")
            return
        device, memory, budget = link.device, self.memory, self.explore_budget
        apps = list(device.apps.items())
        if not apps:
            self.notify(f"{device.address} has none of the apps hexa knows.", severity="warning")
            return

        def events(job: Job):
            return explore_events(device, memory, apps, budget, job.cancel)

        self.session_id = None            # the log now shows the exploration, not a session
        log = self.query_one(StepLog)
        await log.clear()
        await log.line(Text.assemble(("Explore ", "bold"), f"{', '.join(n for n, _ in apps)} · at most "
                                     f"{budget} actions each (Esc stops, keeping what was learned)"), "step-task")
        self.query_one(ExploreBar).begin(len(apps), budget)
        self.exploring = self.start(events, None).rid
        await self.refresh_sessions()

    async def explore_event(self, event) -> None:
        bar = self.query_one(ExploreBar)
        if isinstance(event, ExploreProgress):
            bar.progress(event.index, event.name, event.report)
        elif isinstance(event, AppExplored):
            bar.app_done(event.index)
            await self.query_one(StepLog).line(Text(summary_text(event.report, event.stopped)), "step-explore")
            await self.refresh_known()
        elif isinstance(event, PhoneGone):
            await self.query_one(StepLog).error(f"the phone went away: {event.message} (what was "
                                                f"learned is kept)")
            self.disconnected(event.message)

    async def explore_finished(self, error: str | None) -> None:
        self.exploring = None
        self.query_one(ExploreBar).end()
        if error:
            await self.query_one(StepLog).error(error)
        await self.refresh_known()

    def explore_cancelled(self) -> None:
        self.query_one(ExploreBar).stopping()
        self.notify("Stopping the exploration: what it learned is kept.")

    async def refresh_known(self) -> None:
        """The apps the memory has graphs of, in the line under the device bar."""
        if self.runtime is None:
            return
        try:
            rows = await self.mem(known_apps, self.memory)
        except MemoryCallFailed:
            return
        self.known = rows
        device = self.link.device if self.link is not None else None
        line = known_line(rows, getattr(device, "apps", None))
        if not rows:
            line += f": Explore ({self.app.key_label('agent.explore')}) learns the phone's apps first"  # type: ignore[attr-defined]
        self.query_one("#known-apps", Label).update(line)
