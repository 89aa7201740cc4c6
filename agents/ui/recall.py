"""Episode recall: what worked for similar tasks is tried first (with this task's own slot
values), what failed for them is tried last. "Similar" compares tasks with their slots masked
("Delete the contact <name>"), so a repeat with another name still finds its precedent; only
episodes the agent itself verified as done count as successes — never a benchmark's check.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from .goals import VERBS, Goal
from .relevance import Relevance
from .slots import TaskInfo, analyze

SIMILAR = 0.86            # cosine of the masked tasks
LOOK_BACK = 300           # most recent episodes compared
BOOST, PENALTY = 0.9, 0.4


def template(info: TaskInfo) -> str:
    """The task with each slot replaced by its kind."""
    text, shift = info.text, 0
    for s in info.slots:
        tag = f"<{s.kind}>"
        text = text[:s.start + shift] + tag + text[s.end + shift:]
        shift += len(tag) - (s.end - s.start)
    return text


class Recall:
    def __init__(self, memory: Any, info: TaskInfo, rel: Relevance):
        self.good: Counter = Counter()      # goal id -> weight, from verified successes
        self.bad: Counter = Counter()       # goal id -> weight, from failures
        self.orders: list[tuple[float, list]] = []   # (similarity, the goals a success finished, in order)
        self.done: set = set()              # goals this episode reached (the planner keeps it current)
        self.matches = 0
        try:
            episodes = memory.episodes.list(limit=LOOK_BACK)
        except Exception:                   # a help, not a requirement
            episodes = []
        mine = template(info)
        kinds = sorted(s.kind for s in info.slots)
        others = [(e, template(analyze(e.task))) for e in episodes if e.outcome != "running"]
        others = [(e, t) for e, t in others if sorted(s.kind for s in analyze(e.task).slots) == kinds]
        if not others or rel.vectors is None:
            return
        vecs = rel.vectors([mine] + [t for _, t in others])
        from .relevance import _cos

        verb = _verb(mine)
        for (e, t), v in zip(others, vecs[1:]):
            sim = _cos(vecs[0], v)
            if sim < SIMILAR or _verb(t) != verb:
                continue          # "Unblock <phone>" is no repeat of "Block <phone>", however alike
            goals = [tuple(s["goal"]) for s in e.steps if s.get("goal") and s.get("finishes")]
            if e.success is True:
                self.matches += 1
                self.orders.append((sim, goals))
                for gid in goals:
                    self.good[gid] = max(self.good[gid], sim)
            elif e.outcome != "stopped":
                for gid in goals:
                    self.bad[gid] = max(self.bad[gid], sim)

    def bonus(self, goal: Goal) -> float:
        """What worked before, in the order it worked: only a remembered success's next goal
        gets its weight (the alarm is made before it is labelled, or the label goes to another)."""
        nxt = max((sim for sim, order in self.orders
                   if next((g for g in order if g not in self.done), None) == goal.id), default=0.0)
        return BOOST * nxt - PENALTY * self.bad.get(goal.id, 0.0)

    def sources(self) -> list[list[int]]:
        return []


def _verb(text: str) -> str:
    """The first action verb a task says ("" when none)."""
    m = VERBS.search(text)
    return m.group(1).lower() if m else ""
