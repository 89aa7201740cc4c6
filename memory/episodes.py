"""UI-agent episodes: the trajectory memory (task, screens, actions, outcome).

An episode is stored as an ``agent`` session whose user message is the task and whose assistant
messages are the actions (with their token ids), so the session list, export and drafting
sources treat it like any conversation; the ``episodes`` row adds the device, the outcome, whether
a check on the device's state confirmed it, and the screens the actions were chosen on.

Similar tasks are found through the ``messages`` vectors of the tasks (the user messages of agent
sessions): nothing new to index or repair.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Sequence

from .errors import StoreError
from .models import Message
from .repository import Repository
from .retrieval import Retriever
from .store import Store, now

MODE = "agent"
TITLE_CHARS = 60
OUTCOMES = ("running", "done", "step_limit", "loop", "stopped", "disconnected", "refused", "error",
            "no_plan")


@dataclass
class Episode:
    session_id: int
    task: str
    device: str
    outcome: str                 # one of OUTCOMES
    success: bool | None         # checked on the device's state; None when nobody checked
    steps: list[dict] = field(default_factory=list)   # {"screen", "app", "action", "element", ...}
    created: float = 0.0
    updated: float = 0.0

    @property
    def usable(self) -> bool:
        """Worth showing as an example: confirmed by a check on the device's state, or finished
        by ``done`` and not refuted by one."""
        if not self.steps or self.success is False:
            return False
        return self.success is True or self.outcome == "done"

    def to_json(self) -> dict:
        return asdict(self)


class EpisodeLog:
    def __init__(self, store: Store, repo: Repository, retriever: Retriever):
        self.store, self.repo, self.retriever = store, repo, retriever

    def start(self, task: str, device: str, model: str = "") -> Episode:
        task = " ".join(task.split())
        if not task:
            raise StoreError("an episode needs a task")
        title = task[:TITLE_CHARS] + ("…" if len(task) > TITLE_CHARS else "")
        session = self.repo.new_session(MODE, title, model, "")
        self.repo.add_message(session.id, "user", task, None, MODE, model, {})
        t = now()
        with self.store.write() as c:
            c.execute("INSERT INTO episodes(session_id, task, device, created, updated)"
                      " VALUES (?,?,?,?,?)", (session.id, task, device, t, t))
        return Episode(session.id, task, device, "running", None, [], t, t)

    def add_step(self, session_id: int, step: dict, action: str, token_ids: Sequence[int] = (),
                 stats: dict | None = None, model: str = "") -> Message:
        """One action: a message (text + token ids, a future drafting source) and the step's
        record (screen summary, app, element...) appended to the trajectory, in that order, so a
        crash between the two loses the screen, never the action."""
        msg = self.repo.add_message(session_id, "assistant", action, list(token_ids) or None, MODE,
                                    model, stats or {})
        self._append(session_id, dict(step, action=action))
        return msg

    def add_hindsight(self, session_id: int, step: dict, action: str) -> None:
        """A step nobody took, learnt from a check on the device's state (e.g. where the task
        was already done): in the trajectory, marked ``hindsight``, never as a message."""
        self._append(session_id, dict(step, action=action, hindsight=True))

    def _append(self, session_id: int, step: dict) -> None:
        with self.store.write() as c:
            row = c.execute("SELECT steps FROM episodes WHERE session_id = ?",
                            (session_id,)).fetchone()
            if row is None:
                raise StoreError(f"no episode {session_id}")
            steps = json.loads(row["steps"]) + [step]
            c.execute("UPDATE episodes SET steps = ?, updated = ? WHERE session_id = ?",
                      (json.dumps(steps, ensure_ascii=False), now(), session_id))

    def finish(self, session_id: int, outcome: str, success: bool | None = None) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        with self.store.write() as c:
            n = c.execute("UPDATE episodes SET outcome = ?, success = ?, updated = ? WHERE"
                          " session_id = ?", (outcome, None if success is None else int(success),
                                              now(), session_id)).rowcount
        if not n:
            raise StoreError(f"no episode {session_id}")

    def get(self, session_id: int) -> Episode | None:
        r = self.store.one("SELECT * FROM episodes WHERE session_id = ?", (session_id,))
        return _episode(r) if r else None

    def list(self, limit: int | None = None) -> list[Episode]:
        sql = "SELECT * FROM episodes ORDER BY created DESC, session_id DESC"
        rows = self.store.query(sql + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        return [_episode(r) for r in rows]

    def similar(self, task: str, k: int = 3, usable_only: bool = True,
                min_score: float = 0.8) -> list[tuple[float, Episode]]:
        """Finished episodes whose task is most like ``task``, best first, as (similarity,
        episode); verified successes before unchecked ones at equal similarity."""
        if k <= 0:
            return []
        hits = self.retriever.nearest(" ".join(task.split()), lambda vi, qv: vi.query(
            "messages", qv, k * 8, where={"$and": [{"mode": MODE}, {"role": "user"}]}))
        best: dict[int, float] = {}
        for vid, score, meta in hits:
            sid = int(meta.get("session_id", 0))
            if score >= min_score and score > best.get(sid, -1.0):
                best[sid] = score
        if not best:
            return []
        rows = self.store.query(f"SELECT * FROM episodes WHERE session_id IN "
                                f"({','.join('?' * len(best))})", list(best))
        found = [(best[r["session_id"]], _episode(r)) for r in rows]
        found = [(s, e) for s, e in found if e.usable or not usable_only]
        found.sort(key=lambda se: (round(se[0], 3), se[1].success is True, se[1].created),
                   reverse=True)
        return found[:k]

    def export_jsonl(self) -> str:
        """Every episode, oldest first, one JSON object per line."""
        return "".join(json.dumps(e.to_json(), ensure_ascii=False) + "\n"
                       for e in reversed(self.list()))


def _episode(r) -> Episode:
    success = None if r["success"] is None else bool(r["success"])
    return Episode(r["session_id"], r["task"], r["device"], r["outcome"], success,
                   json.loads(r["steps"] or "[]"), r["created"], r["updated"])
