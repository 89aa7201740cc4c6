"""The agent mode's step log: per step the screen read, the action, the engine's figures of that
step, refusals and errors; then the episode's outcome. A ``Transcript`` to the base screen (so
new, open and delete session, and engine notices, work unchanged), with lines instead of
messages."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from memory import ResponseStats

from .sessions import outcome_style
from .transcript import Transcript


def figures(stats: ResponseStats | None) -> str:
    """The engine's figures of one step: tokens, accepted per step, ms per token."""
    if stats is None:
        return ""
    parts = [f"{stats.new_tokens} tok"]
    if stats.mean_accepted:
        parts.append(f"{stats.mean_accepted:.2f} acc/step")
    if stats.ms_per_token:
        parts.append(f"{stats.ms_per_token:.1f} ms/tok")
    return " · ".join(parts)


class StepLog(Transcript):
    BORDER_TITLE = "Steps"

    def anchor(self, anchor: bool = True) -> None:
        """Not anchored: an anchored view draws short content at its bottom, as a chat does; a
        log reads from the top (``line`` scrolls to each new line)."""

    async def line(self, text: str | Text, classes: str = "") -> None:
        await self.mount(Static(text, classes=f"step-line {classes}".strip(), markup=False))
        self.scroll_end(animate=False)

    async def task(self, task: str) -> None:
        await self.line(Text.assemble(("Task ", "bold"), task), "step-task")

    async def observed(self, step: int, app: str, title: str) -> None:
        where = app + (f" · {title}" if title else "")
        await self.line(Text.assemble((f"step {step}", "bold"), f"  {where}"), "step-head")

    async def acted(self, action: str, element: str, stats: ResponseStats | None, error: str = "") -> None:
        text = Text.assemble("  → ", (action, "bold cyan"), f"  {element}" if element else "")
        figs = figures(stats)
        if figs:
            text.append(f"\n    {figs}", style="dim")
        if error:
            text.append(f"\n    refused by the phone: {error}", style="red")
        await self.line(text, "step-act")

    async def ended(self, outcome: str, steps: int, message: str = "", success: bool | None = None) -> None:
        verdict = "" if success is None else (" · check passed" if success else " · check FAILED")
        text = Text.assemble(("■ ", outcome_style(outcome)), (outcome, f"bold {outcome_style(outcome)}"),
                             f" after {steps} step{'s' if steps != 1 else ''}{verdict}")
        if message and message.rstrip(".").lower() != outcome:    # not "stopped — Stopped."
            text.append(f" — {message}")
        await self.line(text, "step-end")

    async def error(self, message: str) -> None:
        await self.line(Text(f"error: {message}", style="red"), "step-end")

    async def load(self, messages) -> None:
        await self.replay(messages, None)

    async def replay(self, messages, episode) -> None:
        """A stored episode, read-only: the task, each action with its figures, the outcome."""
        await self.remove_children()
        steps = list(getattr(episode, "steps", None) or [])
        actions = [m for m in messages if m.role == "assistant"]
        for m in messages:
            if m.role == "user":
                await self.task(m.text)
        for i, m in enumerate(actions):
            record = steps[i] if i < len(steps) else {}
            where = " · ".join(x for x in (record.get("app", ""), record.get("title", "")) if x)
            if where:
                await self.line(Text.assemble((f"step {i + 1}", "bold"), f"  {where}"), "step-head")
            await self.acted(m.text, record.get("element", ""), m.stats)
        if episode is not None and episode.outcome != "running":
            await self.ended(episode.outcome, len(actions), success=episode.success)
