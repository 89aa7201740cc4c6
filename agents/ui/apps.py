"""Which app a task is for, when it does not say: the app whose name or kind of thing the task
says ("a contact", "the alarm"), whose screens use the task's words and mean what it means,
whose lists showed the task's names, and whose graph holds its best goals."""
from __future__ import annotations

import re

from .device import LAUNCHERS
from .goals import GoalFinder
from .graph import AppGraph
from .relevance import Relevance, synonyms, words_of
from .screen import Screen
from .step import Step


# a person's detail: "Felix Gallagher's phone number", "Ana's email"
PERSON_DETAIL = re.compile(r"[A-Z][\w-]*['’]s (?:(?:mobile|work|home|cell) )?(phone|mobile|number|email|e-mail|address|"
                           r"birthday|company|job title|nickname|website|notes?)\b"
                           # "the number for Nadia Petrov", "the company of Noah Quinn"
                           r"|\b(?:(?:mobile|work|home|cell) )?(phone|mobile|number|email|e-mail|address|birthday|company|"
                           r"job title|nickname|website|notes?) (?:for|of) [A-Z]")


class AppChooser:
    def __init__(self, task, rel: Relevance, graphs: list[AppGraph], finder: GoalFinder, apps: dict[str, str]):
        self.task, self.rel, self.graphs, self.finder, self.apps = task, rel, graphs, finder, apps

    def rank(self) -> list[tuple[str, float]]:
        """The explored apps, most likely to hold the task first."""
        return [(s.text, s.score) for s in self.open_app_steps(self.apps, None) if s.action == "open_app"]

    def _holds(self, package: str) -> int:
        """How many of the task's names and numbers this app's lists showed when explored."""
        g = next((x for x in self.graphs if x.package == package), None)
        if g is None:
            return 0
        labels = {lab for s in g.screens.values() for e in s.elements.values() if e.varies for lab in e.labels}
        return sum(1 for slot in self.task.slots if slot.kind in ("name", "phone")
                   and any(self.rel.slot_hits(lab, [slot])[0] >= 0.9 for lab in labels))

    def _kept_by(self, name: str, task_words: set[str]) -> bool:
        """Whether the task names the kind of thing this app keeps: the words of its first
        screen's tabs and title ("Alarm", "Timer" for Clock; "Contacts" for Contacts)."""
        g = next((x for x in self.graphs if x.package == self.apps.get(name)), None)
        if g is None or g.home is None or g.home not in g.screens:
            return False
        home = g.screens[g.home]
        tabs = [e.label for e in home.elements.values() if e.fixed and not e.row and e.cls == "FrameLayout"]
        # a word that only qualifies a setting ("the alarm volume", "the alarm sound") names no
        # alarm to keep
        return bool(words_of(home.title, *tabs) & (task_words - self.finder.qualifiers))

    def _keeps_people(self, package: str) -> bool:
        """Whether the task asks about a person's detail ("Felix's phone number") and this app
        has a form that holds a person's name with that detail (a contact's editor, not a
        block list's lone number field)."""
        m = PERSON_DETAIL.search(self.task.text)
        g = next((x for x in self.graphs if x.package == package), None)
        if m is None or g is None or any(s.kind == "text" and s.start <= m.start() < s.end for s in self.task.slots):
            return False          # (a value to enter is no one's detail: name the phone "Noah's phone")
        want = {x for w in words_of(m.group(1) or m.group(2)) for x in synonyms(w) | {w}}   # (a number: Phone)
        for s in g.screens.values():
            fields = [words_of(e.label, e.key.replace("_", " ")) for e in s.elements.values() if e.kind == "field"]
            if any(f & {"first", "last"} for f in fields) and any(f & want for f in fields):
                return True
        return False

    def _titles(self, package: str) -> list[str]:
        g = next((x for x in self.graphs if x.package == package), None)
        return [s.title for s in g.screens.values() if s.title and s.kind == "screen"] if g else []

    def app_words(self, apps: dict[str, str]) -> dict[str, set[str]]:
        """Each explored app's vocabulary: its name, its screens' titles and labels."""
        if not hasattr(self, "_app_words"):
            self._app_words = {}
            for name, pkg in apps.items():
                g = next((x for x in self.graphs if x.package == pkg and x.screens), None)
                if g is not None:
                    self._app_words[name] = words_of(name, *(s.title for s in g.screens.values()),
                                                     *(e.label for s in g.screens.values()
                                                       for e in s.elements.values() if e.fixed))
        return self._app_words

    def open_app_steps(self, apps: dict[str, str], screen: Screen | None) -> list[Step]:
        """On the home screen (or in an app nobody explored): open the app whose graph holds the
        best goals and says the task's words (an app the task names first)."""
        if len(self.finder.graphs) == 1 and screen is not None:        # committed to one app
            name = next((n for n, pkg in apps.items() if pkg == self.finder.graphs[0].package), None)
            if name is not None:
                return [Step("open_app", text=name, why=f"open {name}", score=1.0)]
        best: dict[str, float] = {}
        for goal in self.finder.goals(list(range(len(self.task.slots))), limit=30):
            g = next((x for x in self.graphs if goal.screen in x.screens), None)
            if g is None:
                continue
            name = next((n for n, pkg in apps.items() if pkg == g.package), None)
            if name is not None:
                best[name] = max(best.get(name, -9.0), goal.score)
        words = self.app_words(apps)
        names = [n for n in words if n in best]
        titles = {n: f"{n} app: " + ", ".join(t for t in self._titles(apps[n])[:12]) for n in names}
        task_words = set(self.rel.words)
        for name, sem in zip(names, self.rel.semantic([titles[n] for n in names])):
            # the app's own name said in the task ("a contact", "the alarm": the app that keeps
            # them) first; then the words of its screens, what it means, and its best goal
            said = 2.0 if words_of(name) & task_words or self._kept_by(name, task_words) else 0.0
            best[name] = said + 1.0 * self.rel.lexical_in(words[name]) + 1.5 * sem + 0.3 * best[name] \
                + 0.5 * self._holds(apps[name]) + (1.0 if self._keeps_people(apps[name]) else 0.0)
        for name in apps:                 # named as an app is ("in Messages", "Google Clock")
            m = re.search(rf"\b{re.escape(name)}\b", self.task.text)
            # not a name the task gives as a value ("set Chrome as the default browser": Settings
            # does that; Chrome, which nobody explored, was opened again and again)
            if m and not any(s.start <= m.start() < s.end for s in self.task.slots):
                best[name] = best.get(name, 0.0) + 2.0
        steps = [Step("open_app", text=name, why=f"open {name}", score=score)
                 for name, score in sorted(best.items(), key=lambda kv: -kv[1])]
        if screen is not None and screen.package not in ("", *LAUNCHERS):
            steps.append(Step("home", why="go to the home screen", score=-1.0))
        return steps or [Step("home", why="go to the home screen")]

