"""The UI agent: observe the phone, choose one action under a constraint, confirm, perform, repeat.

One step: read the screen (uiautomator) → rank its elements against the task → the engine writes
one action, constrained to the actions valid on this screen (so a 135M model cannot write an
invalid one, and speculative decoding stays lossless with respect to constrained greedy) →
sensitive actions wait for the user's yes → the action runs over adb with quoted arguments.
Until ``done``, the step limit, a loop, Esc, or the phone going away. Every step is stored as it
happens (a crash or a lost phone keeps the trajectory so far); finished episodes come back as
examples and drafting sources for similar tasks.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

from engine.events import Done, Notice

from ..common import AgentError, stats_of
from ..events import Acted, EpisodeEnd, Observed
from . import prompt
from .actions import Action, ActionError, check, grammar_alternatives, parse
from .adb import DeviceError
from .device import Device
from .ranking import Ranker
from .safety import LoopGuard, confirmation_needed

MODE = "agent"
MAX_ACTION_TOKENS = 48           # the longest action (done with a 100-character answer) fits
EXAMPLE_EPISODES = 3
HINDSIGHT_DONE = 'done("Task complete")'

Confirm = Callable[[str], bool]


def refuse(_question: str) -> bool:
    return False


class UIAgent:
    mode = MODE

    def __init__(self, engine: Any, memory: Any, settings: Any, device: Device,
                 confirm: Confirm = refuse, settle_s: float = 0.0):
        self.engine, self.memory, self.settings, self.device = engine, memory, settings, device
        self.confirm = confirm            # asked before a sensitive action; False refuses it
        self.settle_s = settle_s          # wait after an action before reading the screen again
        embed = getattr(memory, "embedder", None) if memory is not None else None
        self.ranker = Ranker(embed)

    def run(self, task: str, cancel: threading.Event | None = None,
            check_state: Callable[[], bool | None] | None = None) -> Iterator:
        """One episode, as events: ``Observed``, the engine's events, ``Acted``, … ``EpisodeEnd``.
        ``check_state`` (agent-bench) says whether the device's state shows the task done."""
        task = " ".join(task.split())
        if not task:
            raise AgentError("Nothing to do: type a task.")
        episode = self.memory.episodes.start(task, self.device.address, self.engine.model_name)
        sid = episode.session_id
        examples = self._similar(task)
        sources = self._sources(examples)
        done_actions: list[str] = []
        guard = LoopGuard()
        outcome, message, step = "step_limit", "", 0
        try:
            for step in range(1, int(self.settings.agent_steps) + 1):
                if cancel is not None and cancel.is_set():
                    outcome, message = "stopped", "Stopped."
                    break
                screen = self.device.observe()
                shown = self.ranker.rank(task, screen.elements, int(self.settings.agent_elements))
                yield Observed(step, screen, tuple(shown))
                apps = sorted(self.device.apps)
                turn = prompt.turn_text(task, screen, shown, self.device.apps, done_actions)
                chosen = prompt.examples_for(turn, shown, examples, limit=1)
                done = yield from self._choose(turn, chosen, sources, shown, screen, apps, cancel)
                if done is None or done.stop_reason == "cancelled":
                    outcome, message = "stopped", "Stopped."
                    break
                action = parse(done.text)           # the constraint makes these hold
                check(action, shown, screen, apps)
                record = {"turn": turn, "app": screen.package, "title": screen.title,
                          "element": shown[action.index - 1].label if action.index else ""}
                if action.name == "done":
                    self.memory.episodes.add_step(sid, record, str(action), done.token_ids,
                                                  stats_of(done), self.engine.model_name)
                    yield Acted(step, str(action))
                    outcome, message = "done", action.text
                    break
                if guard.looping(screen.signature(), action):
                    outcome, message = "loop", f"{action} repeated on an unchanged screen"
                    break
                if guard.undoes(screen.title, action, shown):
                    outcome, message = "loop", f"{action} would flip back the switch just flipped"
                    break
                reason = confirmation_needed(action, shown)
                if reason is not None and not self.confirm(f"Allow {reason}?"):
                    outcome, message = "refused", f"Not allowed: {reason}"
                    break
                self.memory.episodes.add_step(sid, record, str(action), done.token_ids,
                                              stats_of(done), self.engine.model_name)
                done_actions.append(str(action))
                yield self._perform(step, action, shown, screen)
                if self.settle_s:
                    time.sleep(self.settle_s)
            else:
                message = f"Step limit ({self.settings.agent_steps}) reached."
        except DeviceError as exc:
            outcome, message = "disconnected", str(exc)
        except (ActionError, AgentError) as exc:
            outcome, message = "error", str(exc)
        success = None
        if check_state is not None and outcome != "disconnected":
            try:
                success = check_state()
                if success and outcome != "done":
                    self._hindsight_done(sid, task, done_actions)
            except DeviceError as exc:
                message = message or str(exc)
        self.memory.episodes.finish(sid, outcome, success)
        yield EpisodeEnd(sid, outcome, step, message, success)

    # -- one step ---------------------------------------------------------------------------------
    def _choose(self, turn, chosen, sources, shown, screen, apps, cancel) -> Iterator:
        """Generate one action under the screen's constraint; returns the engine's Done."""
        from engine.constraint import Grammar

        constraint = self.engine.constraint(Grammar(grammar_alternatives(shown, screen, apps)))
        ids = self.engine.chat_ids(prompt.messages(turn, chosen))
        if len(ids) + MAX_ACTION_TOKENS > self.engine.context_window and chosen:
            ids = self.engine.chat_ids(prompt.messages(turn, []))   # the example goes first
        if len(ids) + MAX_ACTION_TOKENS > self.engine.context_window:
            yield Notice("The screen does not fit in the context window: it was cut.")
        done = None
        for event in self.engine.generate(ids, max_new_tokens=MAX_ACTION_TOKENS,
                                          method=self.settings.method,
                                          sources=sources, cancel=cancel,
                                          constraint=constraint):
            if isinstance(event, Done):
                done = event
            yield event
        return done

    def _perform(self, step: int, action: Action, shown, screen) -> Acted:
        label = shown[action.index - 1].label if action.index else ""
        try:
            command = self.device.perform(action, shown, screen)
        except ActionError as exc:       # the phone refused (e.g. text it cannot type)
            return Acted(step, str(action), label, error=str(exc))
        return Acted(step, str(action), label, command)

    def _hindsight_done(self, sid, task: str, done_actions: list[str]) -> None:
        """A check found the task done though the model did not say so: the screen it ended on
        is stored with ``done`` as the step to take there (marked ``hindsight``: the model did
        not write it), so the next similar task has an example of where to stop."""
        screen = self.device.observe()
        shown = self.ranker.rank(task, screen.elements, int(self.settings.agent_elements))
        turn = prompt.turn_text(task, screen, shown, self.device.apps, done_actions)
        self.memory.episodes.add_hindsight(sid, {"turn": turn, "app": screen.package,
                                                 "title": screen.title}, HINDSIGHT_DONE)

    # -- memory -----------------------------------------------------------------------------------
    def _similar(self, task: str) -> list:
        try:
            return self.memory.episodes.similar(task, k=EXAMPLE_EPISODES)
        except Exception:     # examples are a help, not a requirement
            return []

    def _sources(self, episodes) -> list[list[int]]:
        """The actions of similar episodes, each a drafting source (an agent repeats them)."""
        if not getattr(self.settings, "history_drafting", True):
            return []
        out: list[list[int]] = []
        for _, episode in episodes:
            for msg in self.memory.messages(episode.session_id):
                if msg.role == "assistant" and msg.token_ids:
                    out.append(list(msg.token_ids))
        return out
