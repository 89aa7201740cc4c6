"""The runs of ``hexa agent-bench``: the configurations (rungs) of the ladder, one task's life on the
virtual phone through the harness, and what is recorded of it.

The harness and the agent never meet: ``TaskEval`` sets the phone up and judges its state; the agent
is given the task's words and nothing else (not its check, not its setup), and only what the agent
does is stored in its memory. The bench also audits the agent's confirmation gate from outside: a
step acting on a sensitive element (by the agent's own rule) must have been preceded, in that
step, by a call to ``confirm``.
"""
from __future__ import annotations

import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from agents.events import Acted, EpisodeEnd, Observed
from engine.events import Done

# rung -> the agent's options it runs with (on top of the user's settings)
RUNGS: dict[str, dict[str, Any]] = {
    "top": dict(policy="top", verify=False, recall=False),              # tap the top-ranked element
    "planner": dict(policy="planner", verify=False, recall=False),
    "model": dict(policy="model", verify=False, recall=False),
    "model+verify": dict(policy="model", verify=True, recall=False),
    "planner+verify": dict(policy="planner", verify=True, recall=False),  # no model at all
    "repeats": dict(policy="planner", verify=True, recall=True),        # the default agent; attempts
                                                                        # 2+ recall 1
}
INDEX = re.compile(r"^(?:tap|long_press|type)\((\d+)")


@dataclass
class Rung:
    name: str
    options: dict
    repeat: int = 1


@dataclass
class BenchTask:
    task: Any                 # agents.phone.device.checks.Task
    kind: str                 # "shipped" or "variant"


@dataclass
class Audit:
    """What one episode did, seen from outside the agent: its events and its calls to ``confirm``."""
    step: int = 0
    shown: tuple = ()
    screen: Any = None
    confirmed: set[int] = field(default_factory=set)      # steps in which confirm was called
    confirms: int = 0
    sensitive: int = 0            # actions taken on a sensitive element
    unconfirmed: int = 0          # ... without a confirm call in that step
    invalid: int = 0              # actions the phone refused
    actions: list[str] = field(default_factory=list)
    dones: list[Done] = field(default_factory=list)
    end: EpisodeEnd | None = None

    def confirm(self, question: str) -> bool:
        """The bench says yes to every sensitive action, and counts the questions."""
        self.confirms += 1
        self.confirmed.add(self.step)
        return True

    def see(self, event) -> None:
        if isinstance(event, Observed):
            self.step, self.shown, self.screen = event.step, tuple(event.shown), event.screen
        elif isinstance(event, Done):
            self.dones.append(event)
        elif isinstance(event, Acted):
            self.actions.append(event.action)
            if event.error:
                self.invalid += 1
            elif self._sensitive(event):
                self.sensitive += 1
                if event.step not in self.confirmed:
                    self.unconfirmed += 1
        elif isinstance(event, EpisodeEnd):
            self.end = event

    def _sensitive(self, event: Acted) -> bool:
        from agents.ui.safety import sensitive_reason

        m = INDEX.match(event.action)
        if m is None:
            return False
        i = int(m[1])
        element = self.shown[i - 1] if 0 < i <= len(self.shown) else None
        if element is None and event.element and self.screen is not None:   # acted on an element not shown
            element = next((e for e in self.screen.elements if e.label == event.element), None)
        name = event.action.partition("(")[0]
        return element is not None and sensitive_reason(SimpleNamespace(element=element, action=name)) is not None


def run_task(make_agent: Callable, engine, memory, device, control, options, item: BenchTask,
             rung: str, attempt: int) -> dict:
    """One task, start to check: the harness sets the phone up, the agent works on the task's words
    alone, the harness judges the phone's state and resets it. The run's record."""
    from agents.harness.task_eval import TaskEval

    task = item.task
    ev = TaskEval(task, control)
    ev.initialize()
    audit = Audit()
    t0 = time.perf_counter()
    error = ""
    try:
        agent = make_agent(engine, memory, device, options, confirm=audit.confirm)
        for event in agent.run(ev.goal):
            audit.see(event)
    except Exception as exc:         # an agent that fails is a failed run, not a failed bench
        error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    seconds = time.perf_counter() - t0
    try:
        success = ev.is_successful()
    finally:
        ev.tear_down()
    end = audit.end
    asked = len(audit.dones)
    steps = sum(d.steps for d in audit.dones)
    return {"rung": rung, "attempt": attempt, "app": task.app, "task": task.id, "kind": item.kind,
            "instruction": task.instruction, "success": success,
            "outcome": end.outcome if end is not None else "error",
            "steps": end.steps if end is not None else len(audit.actions),
            "invalid": audit.invalid, "sensitive": audit.sensitive, "confirms": audit.confirms,
            "unconfirmed": audit.unconfirmed, "model_asked": asked,
            "accepted_per_step": sum(d.new_tokens for d in audit.dones) / steps if steps else None,
            "ms_per_token": statistics.fmean(d.ms_per_token for d in audit.dones) if asked else None,
            "seconds": round(seconds, 3), "actions": audit.actions,
            "message": error or (end.message if end is not None else "")}


def run_rung(make_agent: Callable, engine, memory, device, control, options, rung: Rung,
             tasks: list[BenchTask], say=None) -> list[dict]:
    """Every task of a rung, attempt 1 of all before attempt 2 of any (later attempts find the
    earlier episodes in the rung's memory)."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    runs = []
    for attempt in range(1, rung.repeat + 1):
        for n, item in enumerate(tasks, 1):
            run = run_task(make_agent, engine, memory, device, control, options, item, rung.name, attempt)
            runs.append(run)
            mark = "ok  " if run["success"] else "FAIL"
            say(f"[{rung.name} {attempt}/{rung.repeat} {n}/{len(tasks)}] {mark} "
                f"{(run['task'] or '')[:22]:<22} {run['instruction'][:50]:<50} {run['outcome']:<10} "
                f"{run['steps']:>2} steps  {' '.join(run['actions'])[:60]}")
    return runs
