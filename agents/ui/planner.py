"""The planner: the steps worth taking next on the screen in front, best first, each with what
it should lead to (so the agent can check it did) and a line saying so (what the model reads).

Per step: find the goals (``goals.py``) and keep working on the current one unless a clearly
better one shows up; on the goal's screen, first type the slots its fields take and set its dial
or keypad (``entry.py``), then act on the goal; elsewhere, take the first edge of the shortest
known way to it — through the list row showing the task's contact, conversation or alarm when
there is one (scrolling to it when it is below the fold). Elements of the screen in front that
show a slot or the task's words join in (a Send button appears only once a message is typed).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .device import LAUNCHERS
from .entry import digits_step, duration_digits, entry_kind, time_step
from .fields import field_fit
from .goals import VALUE_KINDS, Goal, GoalFinder
from .graph import NEW_SCREEN, AppGraph, UIEdge, UIScreen, element_key
from .progress import Progress
from .relevance import Relevance
from .screen import Element, Screen
from .slots import Slot, norm, split_name

SWITCH_MARGIN = 0.35            # a new goal must beat the current one by this much
MAX_ROW_SCROLLS = 6
NEGATIVE = re.compile(r"^(cancel|no|not now|dismiss|close|never|deny|skip|later|navigate up)$", re.I)
NAME_FIELDS = {"first": ("first", "given"), "last": ("last", "surname", "family")}


@dataclass
class Step:
    action: str                    # tap, long_press, type, swipe, back, done
    element: Element | None = None
    text: str = ""                 # type: what to write; swipe: the direction; done: the answer
    slot: int | None = None        # the slot it uses up
    edge: UIEdge | None = None     # the known edge it follows
    goal: Goal | None = None
    expect: int | None = None      # the screen it should lead to (None: this one / unknown)
    why: str = ""                  # its consequence, for the model and the log
    score: float = 0.0
    finishes: bool = False         # acting on the goal itself

    def key(self) -> tuple:
        return (self.action, element_key(self.element) if self.element else "", self.text)


class Planner:
    def __init__(self, task, relevance: Relevance, graphs: list[AppGraph], recall=None):
        self.task = task
        self.rel = relevance
        self.graphs = graphs
        self.finder = GoalFinder(task, relevance, graphs, recall)

    def finished(self, p: Progress) -> bool:
        """A goal was reached and nothing the task gave is left to use (a name left over counts
        only when some goal would still use it)."""
        if not p.reached or p.values_left():
            return False
        names = [i for i in p.unused() if self.task.slots[i].kind == "name"]
        if not names:
            return True
        for goal in self.finder.goals(p.unused(), exclude=p.done_ids(), limit=3):
            for i in names:
                if i in goal.covers and self.rel.slot_hits(goal.label, [self.task.slots[i]])[0] >= 0.8:
                    return False
        return True

    def open_app_steps(self, apps: dict[str, str], screen: Screen) -> list[Step]:
        """On the home screen (or in an app nobody explored): open the app whose graph holds the
        best goals (an app the task names first)."""
        best: dict[str, float] = {}
        for goal in self.finder.goals(list(range(len(self.task.slots))), limit=20):
            g = next((x for x in self.graphs if goal.screen in x.screens), None)
            if g is None:
                continue
            name = next((n for n, pkg in apps.items() if pkg == g.package), None)
            if name is not None:
                best[name] = max(best.get(name, -9.0), goal.score)
        for name in apps:                 # named as an app is ("in Messages", "Google Clock")
            if re.search(rf"\b{re.escape(name)}\b", self.task.text):
                best[name] = best.get(name, 0.0) + 2.0
        steps = [Step("open_app", text=name, why=f"open {name}", score=score)
                 for name, score in sorted(best.items(), key=lambda kv: -kv[1])]
        if screen.package not in ("", *LAUNCHERS):
            steps.append(Step("home", why="go to the home screen", score=-1.0))
        return steps or [Step("home", why="go to the home screen")]

    # -- the steps ------------------------------------------------------------------------------
    def steps(self, screen: Screen, g: AppGraph, here: UIScreen | None, p: Progress) -> list[Step]:
        goals = self.finder.goals(p.unused(), exclude=p.done_ids())
        goal = self._pick(goals, p)
        out: list[Step] = []
        if goal is not None:
            out += self._toward(goal, screen, g, here, p)
        for other in goals[:4]:
            if goal is None or other.id != goal.id:
                for s in self._toward(other, screen, g, here, p)[:1]:
                    s.score -= 0.3
                    out.append(s)
        out += self._local(screen, here, p)
        if not out or all(s.score < 0.3 for s in out):
            out.append(Step("back", why="go back", score=0.05))
        seen, unique = set(), []
        for s in sorted(out, key=lambda s: -s.score):
            if s.key() not in seen:
                seen.add(s.key())
                unique.append(s)
        return unique

    def _pick(self, goals: list[Goal], p: Progress) -> Goal | None:
        if not goals:
            return None
        best = goals[0]
        cur = p.goal
        if cur is not None and cur.id not in p.done_ids():
            same = next((x for x in goals if x.id == cur.id), None)
            if same is not None and best.score < same.score + SWITCH_MARGIN:
                best = same
        p.goal = best
        return best

    def _toward(self, goal: Goal, screen: Screen, g: AppGraph, here: UIScreen | None,
                p: Progress) -> list[Step]:
        owner = next((x for x in self.graphs if goal.screen in x.screens), g)
        if here is not None and owner is g and goal.screen == here.id:
            return self._at_goal(goal, screen, g, here, p)
        if here is None or owner is not g:
            return []
        route = self._route(g, here, goal, p)
        if route is None:
            return []
        edge = route[0]
        step = self._follow(edge, screen, g, here, p)
        if step is not None:
            step.goal = goal
            step.score = goal.score + 0.5 - 0.02 * len(route)
            step.why = f"{step.why} (on the way to {goal.label or 'the goal'})"
        return [step] if step is not None else []

    # -- on the goal's screen ----------------------------------------------------------------------
    def _at_goal(self, goal: Goal, screen: Screen, g: AppGraph, here: UIScreen, p: Progress) -> list[Step]:
        base = goal.score + 1.0
        fill = self._fill(screen, p)
        if fill:
            for s in fill:
                s.score, s.goal = base + 0.3, goal
            return fill
        entry = self._entry(screen, p, goal)
        if entry is not None:
            entry.score, entry.goal = base + 0.3, goal
            return [entry]
        if goal.kind == "navigate":
            return [Step("done", goal=goal, why=f"{goal.label} is open", score=base, finishes=True)]
        els = [e for e in screen.elements if element_key(e) == goal.key]
        if not els:
            want = here.elements.get(goal.key)
            if want is not None and screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
                return [Step("swipe", text="up", why=f"scroll to {goal.label}", score=base - 0.2, goal=goal)]
            return []
        el = self._row(els, p) if len(els) > 1 else els[0]
        if el is None:
            return self._find_row(screen, here, goal, p, base)
        if goal.kind in ("switch", "choice") and goal.want is not None and el.checked == goal.want:
            return [Step("done", goal=goal, why=f"{el.label} is already {'on' if el.checked else 'off'}",
                         score=base, finishes=True)]
        if goal.kind == "choice" and el.checked:
            return [Step("done", goal=goal, why=f"{el.label} is chosen", score=base, finishes=True)]
        if goal.kind == "field":
            slot = self._slot_for_field(el, p)
            if slot is None:
                return []
            return [Step("type", el, self.task.slots[slot].text, slot, goal=goal, score=base, finishes=True,
                         why=f'type "{self.task.slots[slot].text}" in {el.label}')]
        edge = g.edge(here.id, goal.key, goal.action, el.label)
        hit, which = self.rel.slot_hits(" ".join([el.label, el.desc] + el.texts[:3]),
                                        [self.task.slots[i] for i in p.unused()])
        slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
        return [Step(goal.action if goal.action != "type" else "tap", el, slot=slot, edge=edge, goal=goal,
                     expect=edge.dst if edge is not None and edge.effect in NEW_SCREEN else None,
                     why=f"{goal.action} {el.label!r} " + _effect(g, edge), score=base, finishes=True)]

    def _fill(self, screen: Screen, p: Progress) -> list[Step]:
        """Type the slots this screen's fields take (a form is filled before it is saved)."""
        fields = [e for e in screen.elements if e.editable and not e.password]
        secret = [e for e in screen.elements if e.editable and e.password]
        left = [i for i in p.unused() if self.task.slots[i].kind in VALUE_KINDS + ("name",)]
        if not left or not (fields or secret):
            return []
        out = []
        for e in fields + secret:
            if p.typed.get(element_key(e)):
                continue
            slot = self._slot_for_field(e, p)
            if slot is not None:
                text = self._text_for(e, self.task.slots[slot])
                out.append(Step("type", e, text, slot, why=f'type "{text}" in {e.label}'))
        return out[:1]

    def _slot_for_field(self, e: Element, p: Progress) -> int | None:
        """The slot a field takes: by its kind (a phone number, an email…) and the words next to
        the slot in the task ("works at Acme" goes to Company)."""
        label = " ".join([e.label, e.desc, e.rid.replace("_", " ")]).lower()
        best, score = None, 0.0
        for i in p.unused():
            s = self.task.slots[i]
            sc = field_fit(label, s, self.task.text, e.password)
            if sc > score:
                best, score = i, sc
        return best if score > 0 else None

    def _text_for(self, e: Element, slot: Slot) -> str:
        if slot.kind == "name":
            label = " ".join([e.label, e.rid]).lower()
            first, last = split_name(slot.text)
            if any(w in label for w in NAME_FIELDS["first"]) and last:
                return first
            if any(w in label for w in NAME_FIELDS["last"]) and last:
                return last
        return slot.text

    def _entry(self, screen: Screen, p: Progress, goal: Goal) -> Step | None:
        kind = entry_kind(screen)
        if kind == "time":
            for i in p.unused():
                s = self.task.slots[i]
                if s.kind == "time":
                    nxt = time_step(screen, *s.value)
                    if nxt is None:
                        p.used.add(i)          # the picker shows it
                        return None
                    action, el, text = nxt
                    return Step(action, el, text, why=f"set the time to {s.text}: {action} {el.label}")
        if kind == "digits":
            for i in p.unused():
                s = self.task.slots[i]
                if s.kind == "duration":
                    nxt = digits_step(screen, duration_digits(s.value))
                    if nxt is None:
                        p.used.add(i)
                        return None
                    action, el, text = nxt
                    return Step(action, el, text, why=f"enter {s.text}: tap {el.label}")
        return None

    # -- rows and routes ---------------------------------------------------------------------------
    def _row(self, els: list[Element], p: Progress) -> Element | None:
        """Of a list's rows, the one showing an unused slot (the task's contact, alarm…), or the
        only one; None when the task names one and it is not on screen."""
        slots = [self.task.slots[i] for i in p.unused()] + [self.task.slots[i] for i in p.used]
        best, score = None, 0.0
        for e in els:
            texts = " | ".join([e.label, e.desc] + e.texts[:6])
            for s in slots:
                m = max(self.rel.slot_hits(t, [s])[0] for t in [e.label, e.desc] + e.texts[:6] if t) \
                    if texts else 0.0
                if m > score:
                    best, score = e, m
        if score >= 0.5:
            return best
        named = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone", "time", "text")]
        return None if named else (els[0] if len(els) == 1 else None)

    def _find_row(self, screen: Screen, here: UIScreen, goal: Goal, p: Progress, base: float) -> list[Step]:
        if screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
            return [Step("swipe", text="up", goal=goal, score=base - 0.1, why="scroll to find it")]
        return []

    def _route(self, g: AppGraph, here: UIScreen, goal: Goal, p: Progress) -> list[UIEdge] | None:
        """The way from here to the goal's screen; through the row of an object the task names
        when the way passes a list of such rows."""
        paths = g.paths_from(here.id, avoid=p.failed_edges)
        direct = paths.get(goal.screen)
        best = direct
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone", "time", "text")]
        if not names:
            return best
        for e in g.edges.values():
            if e.dst is None or e.effect not in NEW_SCREEN or e.id in p.failed_edges or e.src not in paths:
                continue
            src = g.screens[e.src]
            el = src.elements.get(e.key)
            if el is None or len(el.labels) < 2 or el.key.startswith(el.cls + ":"):
                continue              # not a list of rows
            labels = el.labels
            if not any(self.rel.slot_hits(lab, [self.task.slots[i]])[0] >= 0.5 for lab in labels for i in names):
                continue
            rest = g.paths_from(e.dst, avoid=p.failed_edges).get(goal.screen)
            if rest is None:
                continue
            way = paths[e.src] + [e] + rest
            if best is None or best is direct or len(way) < len(best):
                best = way
        return best

    def _follow(self, edge: UIEdge, screen: Screen, g: AppGraph, here: UIScreen, p: Progress) -> Step | None:
        els = [e for e in screen.elements if element_key(e) == edge.key]
        el = (self._row(els, p) or (els[0] if not any(self.task.slots[i].kind == "name" for i in p.unused())
                                    else None)) if len(els) > 1 else (els[0] if els else None)
        if el is None:
            if screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
                return Step("swipe", text="up", why=f"scroll to {edge.label}")
            return None
        slot = None
        if len(els) > 1 or not here.elements.get(edge.key, None) or len(here.elements[edge.key].labels) > 1:
            hit, which = self.rel.slot_hits(" ".join([el.label] + el.texts[:3]),
                                            [self.task.slots[i] for i in p.unused()])
            slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
        return Step(edge.action, el, slot=slot, edge=edge, expect=edge.dst,
                    why=f"{edge.action} {el.label!r} " + _effect(g, edge))

    # -- the screen in front --------------------------------------------------------------------------
    def _local(self, screen: Screen, here: UIScreen | None, p: Progress) -> list[Step]:
        """Elements here that show an unused slot or the task's words, scored as goals would be
        (what the graph does not know: a Send button that appears once a message is typed)."""
        out = []
        unused = [self.task.slots[i] for i in p.unused()]
        sid = here.id if here is not None else -1
        for e in screen.elements:
            if NEGATIVE.match(e.label.strip()) or e.password:
                continue
            key = (sid, element_key(e), e.label, "tap")
            if p.acted[key]:
                continue
            hit, which = self.rel.slot_hits(" ".join([e.label, e.desc]), unused)
            lex = self.rel.lexical(e.label, e.desc)
            score = 1.0 * hit + 1.0 * lex
            if score < 0.45:
                continue
            if e.editable:
                continue                  # fields are filled by _fill
            slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
            out.append(Step("long_press" if (e.long_clickable and not e.clickable) else "tap", e, slot=slot,
                            why=f"tap {e.label!r} (it says what the task says)", score=score))
        fill = self._fill(screen, p)
        for s in fill:
            s.score = 1.2
        return out + fill


def _effect(g: AppGraph, edge: UIEdge | None) -> str:
    from .goals import effect_text

    return effect_text(g, edge) if edge is not None else ""


def normalized(text: str) -> str:
    return norm(text)
