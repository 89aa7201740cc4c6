"""The objects a task names and the lists that show them: which row shows the task's contact,
conversation or alarm (its own texts and those of its row), scrolling and searching a list for
it, choosing it, and swiping it away."""
from __future__ import annotations

import re

from .goals import VALUE_KINDS, Goal, made
from .graph import UIScreen, element_key
from .progress import Progress
from .relevance import Relevance
from .screen import Element, Screen
from .slots import Slot
from .step import REMOVE, Step

MAX_ROW_SCROLLS = 6


class Objects:
    def __init__(self, task, rel: Relevance):
        self.task, self.rel = task, rel
        self.made = made(task)              # what the task makes: typed, not looked for

    def hit(self, e: Element, slots: list[int], screen: Screen | None = None) -> tuple[float, Slot | None]:
        """The slot an element shows best (its label, description or a text inside it, or in
        the list row it belongs to: an alarm's switch is known by the alarm's time and label)."""
        best, which = 0.0, None
        texts = [e.label, e.desc] + e.texts[:6]
        if screen is not None and e.row:
            texts += screen.row_texts(e)[:12]
        named = None
        for n, text in enumerate(dict.fromkeys(texts)):
            if text:
                # (a day is a day's own button, not any switch in a card that lists its days)
                m, w = self.rel.slot_hits(text, [self.task.slots[i] for i in slots
                                                 if n < 2 or self.task.slots[i].kind != "day"])
                if m > best:
                    best, which = m, w
                if n == 0 and m >= 0.5:
                    named = w
        # a row is the object its label names: Ana's conversation showing her last message as a
        # preview uses up "Ana", and the quoted message is still there to pick inside it
        return best, named or which

    def row(self, els: list[Element], p: Progress, screen: Screen | None = None) -> Element | None:
        """Of a list's rows, the one showing an unused slot (the task's contact, alarm…), or the
        only one; None when the task names one and it is not on screen."""
        best, score, rank = None, 0.0, -1.0
        for e in els:        # a row showing a slot still to use beats one showing a slot used
            fresh, old = self.hit(e, p.unused(), screen)[0], self.hit(e, sorted(p.used - p.moved_on), screen)[0]
            m = max(fresh, old)
            r = fresh + 0.5 if fresh >= 0.5 else old
            # (its own label saying it beats a neighbour's text in its row: "Landscapes", not "My photos")
            r += 0.1 * max((self.rel.slot_hits(e.label, [self.task.slots[i]])[0] for i in p.unused()), default=0.0)
            if m >= 0.5 and r > rank:
                best, score, rank = e, m, r
        if score >= 0.5:
            return best
        named = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone", "time", "text")]
        if named:
            return None
        ordinal = next((self.task.slots[i] for i in p.unused() if self.task.slots[i].kind == "ordinal"), None)
        if ordinal is not None and els:                 # "the first photo", "the last alarm"
            index = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1}[ordinal.value]
            ordered = sorted(els, key=lambda e: (e.bounds[1], e.bounds[0]))
            return ordered[index] if -len(ordered) <= index < len(ordered) else None
        return els[0] if len(els) == 1 else None

    def find_row(self, screen: Screen, here: UIScreen, goal: Goal | None, p: Progress, base: float) -> list[Step]:
        """The task's object is not on screen: scroll the list down to it, then search for it —
        unless it is a phone number and a field here takes one ("Type name, phone number, or
        email"): typed, it is found or it stands for itself; a number that is no contact's was
        scrolled for to the end of the list, and the way there then left the screen."""
        numbers = [i for i in p.unused() if self.task.slots[i].kind == "phone"]
        if numbers and any(e.editable and re.search(r"\b(phone|number)\b", f"{e.label} {e.desc} {e.rid}", re.I)
                           for e in screen.elements):
            return []
        if screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
            return [Step("swipe", text="up", goal=goal, score=base - 0.1, why="scroll to find it")]
        search = next((e for e in screen.elements if not e.editable and
                       re.search(r"\bsearch\b", f"{e.label} {e.desc} {e.rid}", re.I)), None)
        if search is not None and not p.acted[(here.id, element_key(search), search.label, "tap")]:
            return [Step("tap", search, goal=goal, score=base - 0.1, why="search for it")]
        return []

    def swipe_away(self, screen: Screen, here: UIScreen | None, p: Progress) -> list[Step]:
        """To remove a row the task names from a list that has no delete button for it (a
        world clock's city): swipe it away — a low-scored last resort, so a known delete wins."""
        if here is None or not REMOVE.search(self.task.text):
            return []
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone", "text")]
        # a row may be no element at all: a list of plain texts whose row takes the swipe (the
        # cities of a world clock show only as texts): the text's line is swiped
        # (across the text itself: a swipe from the screen's edge is the system's Back)
        texts = [Element(text=t, cls="TextView", bounds=b, row=True) for t, b in screen.boxes]
        for e in [x for x in screen.elements if x.row and x.owner < 0 and not x.editable] + texts:
            m, which = self.hit(e, names, screen if e.clickable or e.long_clickable else None)
            if m >= 0.8:
                slot = next(i for i in names if self.hit(e, [i], screen if e.clickable else None)[0] == m)
                goal = Goal(here.id, element_key(e), "swipe_away", "commit", e.label, 1.0)
                # (above a way that adds what the task removes: Lima in the Add city picker)
                # (a row that is only text has no other way to be acted on: before any route away)
                # (a row that can be tapped or long-pressed has its own ways to a delete: a swipe
                # there may do something else — a conversation swiped away is archived, not deleted)
                score = 1.0 + m + 0.6 if e in texts else 0.3 + 0.2 * m if e.clickable or e.long_clickable else 1.0 + m
                return [Step("swipe_away", e, slot=slot, goal=goal, finishes=True, score=score,
                             why=f"swipe {e.label!r} away")]
        return []

    def values(self) -> set[int]:
        """The slots that are values to enter, not names of objects to find."""
        return {i for i, s in enumerate(self.task.slots) if s.kind in VALUE_KINDS}

    def select(self, screen: Screen, here: UIScreen | None, p: Progress) -> list[Step]:
        """A row here showing the object the task names (the contact, the conversation): the
        object is chosen before anything is done to it — unless the task creates it."""
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone") and i not in self.made]
        if not names:
            return []
        best, hit = None, 0.0
        for e in screen.elements:
            if e.row and (e.clickable or e.long_clickable) and not e.editable:
                m, which = self.hit(e, names, screen)
                if m > hit:
                    best, hit = e, m
        if best is None or hit < 0.8:
            return []
        slot = next(i for i in names if self.hit(best, [i], screen)[0] == hit)
        return [Step("tap" if best.clickable else "long_press", best, slot=slot, score=1.4 + 0.3 * hit,
                     why=f"open {best.label!r}, the one the task names")]

