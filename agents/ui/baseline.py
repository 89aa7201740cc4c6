"""The baseline the agent is measured against: no planner, no model — tap the element ranked
most like the task (the same screen reading and ranking), until a loop or the step limit."""
from __future__ import annotations

import threading
from typing import Iterator

from ..events import Acted, EpisodeEnd, Observed
from .actions import ActionError
from .adb import DeviceError
from .ranking import Ranker
from .safety import LoopGuard


def run(agent, task: str, sid: int, cancel: threading.Event) -> Iterator:
    opts = agent.options
    ranker = Ranker(getattr(agent.memory, "embedder", None))
    guard = LoopGuard()
    outcome, message, step = "step_limit", f"Step limit ({opts.max_steps}) reached.", 0
    try:
        for step in range(1, opts.max_steps + 1):
            if cancel.is_set():
                outcome, message = "stopped", "Stopped."
                break
            screen = agent.device.observe()
            shown = [e for e in ranker.rank(task, screen.elements, opts.elements) if e.clickable or e.checkable]
            yield Observed(step, screen, tuple(shown))
            if not shown:
                outcome, message = "error", "nothing to tap"
                break
            action = "tap(1)"
            if guard.looping(screen.signature(), action):
                outcome, message = "loop", f"{action} repeated on an unchanged screen"
                break
            agent.memory.episodes.add_step(sid, {"action": "tap", "element": shown[0].label}, action)
            try:
                command = agent.device.tap(shown[0])
                yield Acted(step, action, shown[0].label, command)
            except ActionError as exc:
                yield Acted(step, action, shown[0].label, error=str(exc))
    except DeviceError as exc:
        outcome, message = "disconnected", str(exc)
    agent.memory.episodes.finish(sid, outcome, None)
    yield EpisodeEnd(sid, outcome, step, message, None)
