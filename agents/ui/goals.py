"""Goals: the elements of an app's graph whose action would do what the task asks, scored.

A goal is a *terminal* action — one that changes something rather than moving about: a switch, a
choice, a commit (save, send, delete…), a button that changes its own label (a star, Start) or
the screen's content (+1:00, a keypad key), a list row that picks and returns (a city, a label),
a text field to type a slot into — or, for a task that asks to open, check or view something, a
screen to reach. Its score: what it means next to the task (MiniLM), the task's rarer words it
says, the slots it shows, and the slots the way to it can use up (fields and dials on its screen,
rows on the way).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .graph import NEW_SCREEN, AppGraph, UIEdge, UIElement, UIScreen
from .relevance import Relevance
from .slots import Slot, TaskInfo

VALUE_KINDS = ("text", "email", "phone", "time", "duration", "date", "number", "day")
NAVIGATE = re.compile(r"\b(check|view|open|see|look at|go to|show me|display|find)\b", re.I)
VERBS = re.compile(r"\b(delete|remove|send|block|unblock|archive|save|add|create|set|start|stop|"
                   r"pause|resume|reset|cancel|pin|unpin|star|unstar|mute|export|merge|rename|"
                   r"connect|pair|schedule|forward|lap|search|change|edit|sort|turn|enable|disable|"
                   r"install|uninstall|clear|call|reply|mark|select|done|ok|apply|next)\b", re.I)
TERMINAL_EFFECTS = ("toggle", "relabel", "content", "commit", "untried")


@dataclass
class Goal:
    screen: int                   # the graph screen it is on (navigate: the screen to reach)
    key: str                      # the element ("" for a navigate goal)
    action: str                   # tap, long_press, type, navigate
    kind: str                     # switch, choice, commit, relabel, content, pick, field, navigate, button
    label: str
    score: float = 0.0
    want: bool | None = None      # a switch's wanted state
    covers: list[int] = field(default_factory=list)   # slot indices its screen/path can use up
    why: str = ""

    @property
    def id(self) -> tuple[int, str, str]:
        return self.screen, self.key, self.action


def describe(g: AppGraph, s: UIScreen, el: UIElement, edge: UIEdge | None) -> str:
    """An edge's text for retrieval: where, what, and what it does (templates, no model)."""
    where = " › ".join(g.breadcrumb(s.id)[-3:]) or s.title or "screen"
    what = {"switch": "switch", "choice": "option", "field": "text field", "password": "password field"}.get(el.kind, "button")
    text = f"{where}: {el.label}" + (f" ({el.detail})" if el.detail else "") + f" [{what}]"
    if edge is not None:
        text += " " + effect_text(g, edge)
    return text


def effect_text(g: AppGraph, edge: UIEdge) -> str:
    if edge.effect in NEW_SCREEN and edge.dst in g.screens:
        dst = g.screens[edge.dst]
        items = ", ".join(list(x.label for x in dst.elements.values())[:5])
        if dst.kind == "menu":
            return f"→ menu: {items}"
        if dst.kind in ("dialog", "sheet"):
            return f"→ dialog {dst.title!r}: {items}"
        return f"→ opens {dst.title or items}"
    if edge.effect == "toggle":
        return "→ switches it " + ("on" if edge.detail.get("checked", [0, 1])[1] else "off")
    if edge.effect == "relabel":
        return f"→ becomes {edge.detail.get('labels', ['', ''])[1]!r}"
    if edge.effect == "content":
        return "→ changes " + ", ".join(edge.detail.get("changed", [])[:2])
    if edge.effect == "commit":
        return f"→ {edge.sensitive} (confirm)"
    if edge.effect == "focus":
        return "→ type here"
    if edge.effect == "external":
        return "→ opens another app"
    return ""


class GoalFinder:
    def __init__(self, task: TaskInfo, relevance: Relevance, graphs: list[AppGraph], recall=None):
        self.task, self.rel, self.graphs, self.recall = task, relevance, graphs, recall
        self.navigating = bool(NAVIGATE.search(task.text))

    def goals(self, unused: list[int], exclude: set = frozenset(), limit: int = 8) -> list[Goal]:
        """The best goals over every known screen, best first."""
        found: list[Goal] = []
        texts: list[str] = []
        for g in self.graphs:
            for s in g.screens.values():
                for key, el in s.elements.items():
                    for goal, text in self._of(g, s, el, unused):
                        if goal.id not in exclude:
                            found.append(goal)
                            texts.append(text)
                if self.navigating and s.title and s.kind == "screen":
                    goal = Goal(s.id, "", "navigate", "navigate", s.title,
                                score=1.2 * self.rel.lexical(s.title) + PRIOR["navigate"])
                    if goal.id not in exclude:
                        found.append(goal)
                        texts.append(" › ".join(g.breadcrumb(s.id)[-3:]) or s.title)
        sems = self.rel.semantic(texts)
        for goal, text, sem in zip(found, texts, sems):
            goal.score += 0.8 * sem
            goal.why = text
            if self.recall is not None:
                goal.score += self.recall.bonus(goal)
        found.sort(key=lambda x: -x.score)
        return found[:limit]

    def _of(self, g: AppGraph, s: UIScreen, el: UIElement, unused: list[int]):
        """The goals an element offers (none for a plain way to another screen)."""
        task = self.task
        edges = [e for e in g.edges.values() if e.src == s.id and e.key == el.key]
        tap = next((e for e in edges if e.action == "tap"), None)
        kind = _kind(g, s, el, tap)
        if kind is None:
            return
        action = "type" if kind == "field" else "tap"
        goal = Goal(s.id, el.key, action, kind, el.label)
        words = [el.label, el.detail] + (el.labels[:3] if kind in ("relabel", "switch") else [])
        if tap is not None and tap.effect == "relabel":
            words += tap.detail.get("labels", [])
        lex = self.rel.lexical(*words)
        slot, which = self.rel.slot_hits(el.label, [task.slots[i] for i in unused])
        if kind == "pick" and len(el.labels) > 1:      # a list of choices: does it hold the slot?
            for label in el.labels:
                m, w = self.rel.slot_hits(label, [task.slots[i] for i in unused])
                if m > slot:
                    slot, which = m, w
        goal.score = 1.2 * lex + 1.0 * slot + PRIOR.get(kind, 0.0)
        if kind in ("switch", "relabel") and task.polarity is not None:
            goal.want = task.polarity
            goal.score += 0.15
        if kind == "commit" and VERBS.search(el.label) and self.rel.lexical(el.label) > 0:
            goal.score += 0.2
        if kind == "field":
            from .fields import field_fit

            fit = max((field_fit(" ".join([el.label, el.detail, el.key.replace("_", " ")]).lower(), task.slots[i],
                                 task.text, el.kind == "password") for i in unused), default=0.0)
            goal.score += 0.5 * min(fit, 1.0) - 0.5      # a field is a goal only for a slot it suits
        covers = self._covers(s, el, unused)
        if which is not None:
            covers.add(task.slots.index(which))
        goal.covers = sorted(covers)
        values = [i for i in unused if task.slots[i].kind in VALUE_KINDS]
        if values:
            goal.score += 0.6 * len([i for i in goal.covers if i in values]) / len(values)
        elif unused:
            goal.score += 0.1 * len(goal.covers) / len(unused)
        yield goal, describe(g, s, el, tap)

    def _covers(self, s: UIScreen, el: UIElement, unused: list[int]) -> set[int]:
        """Slots this goal's screen can take: its text fields (those that suit them), a time
        dial, a keypad."""
        from .fields import field_fit

        out: set[int] = set()
        fields = [x for x in s.elements.values() if x.kind in ("field", "password")]
        for i in unused:
            slot = self.task.slots[i]
            k = slot.kind
            if k in ("text", "email", "phone", "name", "number", "date") and any(
                    field_fit(" ".join([x.label, x.detail, x.key.replace("_", " ")]).lower(), slot,
                              self.task.text, x.kind == "password") >= 0.5 for x in fields):
                out.add(i)
            if s.entry == "time" and k == "time":
                out.add(i)
            if s.entry == "digits" and k in ("duration", "number", "phone"):
                out.add(i)
        return out


PRIOR = {"switch": 0.25, "choice": 0.2, "commit": 0.15, "relabel": 0.2, "content": 0.1,
         "pick": 0.1, "field": 0.05, "navigate": 0.2, "button": 0.0}


def _kind(g: AppGraph, s: UIScreen, el: UIElement, tap: UIEdge | None) -> str | None:
    if el.kind == "switch":
        return "switch"
    if el.kind == "choice":
        return "choice"
    if el.kind in ("field", "password"):
        return "field"
    if el.kind == "item":
        return None
    if tap is None:
        return "button"                            # never tried: could be anything
    if tap.effect in TERMINAL_EFFECTS:
        return {"toggle": "switch", "untried": "button"}.get(tap.effect, tap.effect)
    if NEGATIVE.match(el.label.strip()):
        return None
    pickable = not el.fixed or s.kind in ("dialog", "sheet", "menu") or len(el.labels) > 1
    if pickable and tap.effect in NEW_SCREEN and tap.dst is not None and _returns(g, s, tap):
        return "pick"
    return None


NEGATIVE = re.compile(r"^(cancel|no|not now|dismiss|close|never|deny|skip|later|navigate up|"
                      r"collapse.*|exit.*|back)$", re.I)


def _returns(g: AppGraph, s: UIScreen, tap: UIEdge) -> bool:
    """Tapping it goes back towards the app's first screen (a picker's row returns to what
    opened the picker), not further in."""
    depth = g.depths()
    return tap.dst in depth and s.id in depth and depth[tap.dst] < depth[s.id]


def slot_indices(task: TaskInfo, kinds: tuple[str, ...]) -> list[int]:
    return [i for i, s in enumerate(task.slots) if s.kind in kinds]


def best_slot(task: TaskInfo, label: str, unused: list[int], rel: Relevance) -> tuple[float, Slot | None]:
    return rel.slot_hits(label, [task.slots[i] for i in unused])
