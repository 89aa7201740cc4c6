"""One task on the phone, shaped like AndroidWorld's ``TaskEval``: ``initialize`` puts the phone in the
task's start state, ``is_successful`` judges the state the agent left (never the agent's word),
``tear_down`` leaves a fresh phone for whatever runs next."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from agents.phone.device.checks import Task, load_tasks
from agents.phone.device.paths import get

from .control import PhoneControl

TASK_DIR = Path(__file__).resolve().parents[2] / "assets" / "phone" / "tasks"
# every shipped app's tasks: the ones the agent was tuned on first, then the extra ones
DEFAULT_TASK_FILES: tuple[Path, ...] = tuple(
    TASK_DIR / f"{app}{suffix}.jsonl"
    for app in ("settings", "clock", "contacts", "messages") for suffix in ("", "_extra")
    if (TASK_DIR / f"{app}{suffix}.jsonl").exists())


class TaskEvalError(Exception):
    """A one-line misuse of a TaskEval, or a phone that did not take the task's start state."""


class TaskEval:
    """``initialize()`` → the agent acts → ``is_successful()`` → ``tear_down()``."""

    def __init__(self, task: Task, control: PhoneControl):
        self.task = task
        self.control = control
        self.initialized = False

    @property
    def goal(self) -> str:
        return self.task.instruction

    @property
    def app_names(self) -> tuple[str, ...]:
        return (self.task.app,)

    def initialize(self) -> None:
        """The fresh phone plus the task's setup; checks the setup landed (a reset that silently
        dropped it would score a task that was never posed)."""
        self.control.reset(self.task.setup or None)
        state = self.control.state()
        for path, want in (self.task.setup or {}).items():
            if not _holds(get(state, path), want):
                raise TaskEvalError(f"task {self.task.id or self.task.instruction[:40]!r}: after the reset "
                                    f"{path} is {_short(get(state, path))}, not {_short(want)}")
        self.initialized = True

    def is_successful(self) -> bool:
        if not self.initialized:
            raise TaskEvalError(f"task {self.task.id or self.task.instruction[:40]!r} was not initialized")
        return self.task.passed(self.control.state())

    def tear_down(self) -> None:
        self.control.reset()
        self.initialized = False


def load_task_files(paths: Iterable[str | Path] = DEFAULT_TASK_FILES) -> list[Task]:
    """The tasks of JSONL files in order; ValueError (one line) on a bad line or an id used twice."""
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    for path in paths:
        for task in load_tasks(path):
            if task.id and task.id in seen:
                raise ValueError(f"{Path(path).name}: task id {task.id!r} already in {seen[task.id]}")
            seen[task.id] = Path(path).name
            tasks.append(task)
    return tasks


def _holds(actual, want) -> bool:
    # a setup's dict value is merged into the state, so the state may hold more than it says
    if isinstance(want, dict) and isinstance(actual, dict):
        return all(key in actual and _holds(actual[key], value) for key, value in want.items())
    return actual == want


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
