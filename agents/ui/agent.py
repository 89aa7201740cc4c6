"""The UI agent: observe the phone, plan from what exploration learned about its apps, let the
model choose the close calls, confirm what is sensitive, act, and check that the action did
what the graph said it would.

One step: read the screen (uiautomator) and place it in the app's graph → the planner's
candidate steps, each with its consequence (``planner.py``) → the model picks among the close
ones (``chooser.py``) → a sensitive step waits for the user's yes → the step runs over adb →
the screen is read again: a step that did not do what its edge predicted is marked failed and
the planner goes another way; two steps that change nothing and the agent backs off. ``done``
only when the goal's effect is on the screen. Every step is stored as it happens; verified
successes come back as plans for similar tasks (``recall.py``), failures as roads not to take.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

from ..common import AgentError, stats_of
from ..events import Acted, EpisodeEnd, Observed
from . import baseline
from .actions import ActionError
from .adb import DeviceError
from .chooser import ModelChooser
from .device import Device
from .forms import foreign_text
from .graph import AppGraph, UIScreen, element_key
from .knowledge import Knowledge
from .learn import learn_step, locate
from .options import AgentOptions
from .planner import Planner, Step
from .progress import Progress
from .recall import Recall
from .relevance import Relevance
from .safety import LoopGuard, sensitive_reason
from .screen import Screen
from .slots import analyze
from .wording import normalize

MODE = "agent"
STALLS = 2                      # steps that change nothing before backing off

Confirm = Callable[[str], bool]


def refuse(_question: str) -> bool:
    return False


class UIAgent:
    mode = MODE

    def __init__(self, engine: Any, memory: Any, device: Device, options: AgentOptions | None = None,
                 confirm: Confirm = refuse, knowledge: Knowledge | None = None):
        self.engine, self.memory, self.device = engine, memory, device
        self.options = options or AgentOptions()
        self.confirm = confirm            # asked before a sensitive action; False refuses it
        self.knowledge = knowledge or Knowledge(getattr(memory, "ui_graphs", None))
        self.vectors = getattr(memory, "text_vectors", None)

    # -- an episode ---------------------------------------------------------------------------------
    def run(self, task: str, cancel: threading.Event | None = None) -> Iterator:
        """One episode, as events: ``Observed``, the engine's events, ``Acted``, … ``EpisodeEnd``."""
        task = " ".join(task.split())
        if not task:
            raise AgentError("Nothing to do: type a task.")
        opts = self.options
        cancel = cancel or threading.Event()
        episode = self.memory.episodes.start(task, self.device.address, self.engine.model_name)
        sid = episode.session_id
        if opts.policy == "top":
            yield from baseline.run(self, task, sid, cancel)
            return
        core, named = normalize(task, list(self.device.apps))
        if not core.strip(" .,!?") and named is not None:       # "Open Google Clock."
            yield from self._open_only(task, sid, named, cancel)
            return
        info = analyze(core)
        graphs = [self.knowledge.graph(p) for p in self._packages()]
        corpus = [el.label for g in graphs for s in g.screens.values() for el in s.elements.values()]
        rel = Relevance(info, self.vectors, corpus)
        recall = Recall(self.memory, info, rel) if opts.recall else None
        planner = self.planner = Planner(info, rel, graphs, recall)
        planner.apps = dict(self.device.apps)
        ranked = planner.rank_apps(self.device.apps)
        if named is not None:                    # the task says which app
            ranked = [(named, 9.0)] + [(n, sc) for n, sc in ranked if n != named]
        # a second app is worth trying only when it ranked close to the first, and not when the
        # task names the first
        apps = [name for name, score in ranked if score >= ranked[0][1] - 0.3][:2] if ranked else []
        if named is not None:
            apps = apps[:1]
        if apps:
            planner.commit(self.device.apps[apps[0]])
        chooser = ModelChooser(self.engine, opts.method, recall.sources() if recall and opts.history_drafting
                               else ()) if opts.policy == "model" else None
        p = Progress(info)
        guard = LoopGuard()
        outcome, message, step, success = "step_limit", "", 0, None
        trail: list[dict] = []
        try:
            for step in range(1, opts.max_steps + 1):
                if cancel.is_set():
                    outcome, message = "stopped", "Stopped."
                    break
                screen = self.device.observe()
                g, here = locate(self.knowledge, screen, self.device.apps, data=p.data())
                held = foreign_text(screen, here.elements, p.typed) if step == 1 and here is not None else []
                if held:    # typing over a form someone left open would change their data
                    outcome = "refused"
                    message = (f"A form is open ({screen.title or screen.package}) holding "
                               f"{', '.join(repr(t) for t in held[:3])}: finish or close it first")
                    break
                steps = [s for s in self._candidates(planner, screen, g, here, p, graphs)
                         if s.key() not in p.refused] or [Step("back", why="go back", score=0.0)]
                self.last = (here, steps, p)     # for a debugger's eyes (the bench's -v)
                shown = tuple({id(s.element): s.element for s in steps if s.element is not None}.values())
                yield Observed(step, screen, shown)
                chosen, done = steps[0], None
                if chooser is not None and chooser.close_call(steps):
                    where = f"{screen.package} {screen.title}".strip()
                    index, done = yield from chooser.choose(task, where, steps[:4], cancel)
                    if done is not None and done.stop_reason == "cancelled":
                        outcome, message = "stopped", "Stopped."
                        break
                    chosen = steps[index]
                action = _action_text(chosen, shown)
                if chosen.action == "stop":
                    if len(apps) > 1 and not p.reached:       # try the next likeliest app once
                        apps.pop(0)
                        planner.commit(self.device.apps[apps[0]])
                        p.goal = None
                        self.device.launch(self.device.apps[apps[0]])
                        continue
                    outcome, message = "no_plan", "No known way to do this from here (explore the app first?)"
                    break
                if chosen.action == "done":
                    success = True
                    self._store(sid, chosen, here, action, done, trail)
                    yield Acted(step, action)
                    outcome, message = "done", chosen.why
                    break
                if not opts.verify and guard.looping(screen.signature(), action):
                    outcome, message = "loop", f"{action} repeated on an unchanged screen"
                    break
                reason = sensitive_reason(chosen)
                if reason and not self.confirm(f"Allow {reason}?"):
                    outcome, message = "refused", f"Not allowed: {reason}"
                    break
                self._store(sid, chosen, here, action, done, trail)
                acted = self._perform(step, chosen, action, screen)
                yield acted
                if opts.settle_s:
                    time.sleep(opts.settle_s)
                if acted.error:         # refused (text `input text` cannot type): never again
                    p.failed_goals.add(chosen.goal.id) if chosen.goal else None
                    p.refused.add(chosen.key())
                    continue
                after = self.device.observe()
                learn_step(self.knowledge, p, chosen, screen, g, here, after, self.device.apps,
                           verify=opts.verify)
                if opts.verify and p.stalls >= STALLS:
                    if p.goal is not None:
                        p.failed_goals.add(p.goal.id)
                        p.goal = None
                    p.stalls = 0
                    self.device.key("back")
                if p.reached and planner.finished(p):
                    outcome, message, success = "done", f"{p.reached[-1].label}: done", True
                    self._store(sid, Step("done", why=message), None, 'done("Task complete")', None, trail)
                    yield Acted(step + 1, 'done("Task complete")')
                    break
            else:
                message = f"Step limit ({opts.max_steps}) reached."
        except DeviceError as exc:
            outcome, message = "disconnected", str(exc)
        except (ActionError, AgentError) as exc:
            outcome, message = "error", str(exc)
        self.memory.episodes.finish(sid, outcome, success if outcome == "done" else None)
        yield EpisodeEnd(sid, outcome, step, message, None)

    def _open_only(self, task: str, sid, name: str, cancel: threading.Event) -> Iterator:
        """A task that only asks to open an app: open it, done when it is in front."""
        screen = self.device.observe()
        yield Observed(1, screen, ())
        step = Step("open_app", text=name, why=f"open {name}")
        self._store(sid, step, None, f'open_app("{name}")', None, [])
        yield self._perform(1, step, f'open_app("{name}")', screen)
        ok = self.device.observe().package == self.device.apps.get(name)
        self.memory.episodes.finish(sid, "done" if ok else "error", ok or None)
        yield EpisodeEnd(sid, "done" if ok else "error", 1, f"{name} is open" if ok else f"{name} did not open")

    # -- helpers ------------------------------------------------------------------------------------
    def _packages(self) -> list[str]:
        rows = getattr(self.memory, "ui_graphs", None)
        known = [a["package"] for a in rows.apps()] if rows is not None else []
        return known or list(self.device.apps.values())

    def _candidates(self, planner: Planner, screen: Screen, g: AppGraph | None, here: UIScreen | None,
                    p: Progress, graphs: list[AppGraph]) -> list[Step]:
        if g is None:                                   # the home screen or an app not explored
            return planner.open_app_steps(self.device.apps, screen)
        return planner.steps(screen, g, here, p)

    def _perform(self, n: int, step: Step, action: str, screen: Screen) -> Acted:
        label = step.element.label if step.element is not None else step.text
        d = self.device
        try:
            if step.action == "tap":
                command = d.tap(step.element)
            elif step.action == "long_press":
                command = d.long_press(step.element)
            elif step.action == "type":
                command = d.type_into(step.element, step.text)
            elif step.action == "swipe":
                command = d.swipe(step.text, screen)
            elif step.action == "swipe_away":
                command = d.swipe_away(step.element)
            elif step.action == "slide":
                command = d.slide(step.element, step.text)
            elif step.action == "open_app":
                command = d.launch(d.apps[step.text])
            elif step.action == "home":
                command = d.key("home")
            else:
                command = d.key(step.action)
        except ActionError as exc:
            return Acted(n, action, label, error=str(exc))
        return Acted(n, action, label, command)

    def _store(self, sid, step: Step, here: UIScreen | None, action: str, done, trail: list[dict]) -> None:
        record = {"screen": here.id if here is not None else None, "action": step.action,
                  "key": element_key(step.element) if step.element is not None else "",
                  "element": step.element.label if step.element is not None else "",
                  "slot": step.slot, "text": step.text, "why": step.why,
                  "goal": list(step.goal.id) if step.goal is not None else None,
                  "finishes": step.finishes}
        trail.append(record)
        self.memory.episodes.add_step(sid, record, action, list(done.token_ids) if done else (),
                                      stats_of(done) if done else {}, self.engine.model_name)


def _action_text(step: Step, shown: tuple) -> str:
    """The step as the action language of the log (elements numbered as ``shown`` lists them)."""
    i = next((n for n, e in enumerate(shown, 1) if e is step.element), 0)
    if step.action in ("tap", "long_press"):
        return f"{step.action}({i})"
    if step.action == "swipe_away":
        return f"swipe_away({i})"
    if step.action == "slide":
        return f'slide({i}, "{step.text}")'
    if step.action == "type":
        return f'type({i}, "{step.text}")'
    if step.action == "swipe":
        return f"swipe({step.text})"
    if step.action == "open_app":
        return f'open_app("{step.text}")'
    if step.action == "done":
        return 'done("Task complete")'
    return f"{step.action}()"
