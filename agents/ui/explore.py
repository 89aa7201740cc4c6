"""Exploring an app over adb alone, into its UI transition graph (``graph.py``).
A bounded, resumable crawl: open the app on its first screen, then try every element of every
screen it finds — tap, and long press where the element takes one — recording what each did,
and come back (BACK, a dialog's Cancel, or the app opened afresh and a recorded path replayed).
Safe on a real phone: an element whose words commit something (delete, send, block, save, a
dialog's confirming button, …) is recorded as a commit edge and never taken; a switch or a
starred icon is flipped back at once; a single-choice list is learned from its chosen item (so
nothing changes); nothing is typed but a probe word into an empty message box, for the controls
that appear only once there is text (a Send button, and the Schedule send sheet behind its long
press), erased before leaving that screen. A long press is tried on what declares one, a Send
button too: Android runs a view's long-click handler instead of its click. List rows that lead to the same place are learned from
their first two (a contact list is one edge, not two hundred). ``budget`` counts the actions
sent to the phone (taps, swipes, keys, app starts).
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Callable

from .actions import ActionError
from .device import LAUNCHERS, Device
from .exploring import NEGATIVE, NUMBER, POSITIVE, changes, labels_of, same_element, unsafe
from .graph import NEW_SCREEN, SAME, AppGraph, UIEdge, UIElement, UIScreen, element_key, keys_of
from .knowledge import Knowledge
from .screen import Element, Screen

DIGITS = re.compile(r"\d+")

PROBE = "test"               # typed into an empty message box to see what text brings up
MAX_SCAN_SWIPES = 12          # a screen's list is read this far down when it is first seen
GROUP_MIN = 4                 # this many like list rows (or number keys) form a group...
GROUP_SAMPLE = 2              # ...learned from its first two when they do the same
ROW_CAP = 10                  # rows of one list tried at most (when they do not all do the same)
Progress = Callable[["ExploreReport"], None]


class ExploreError(Exception):
    """Exploration cannot go on (one line)."""


@dataclass
class ExploreReport:
    package: str
    actions: int = 0              # sent to the phone in this run
    screens: int = 0              # known after it
    edges: int = 0
    new_screens: int = 0
    new_edges: int = 0
    commits: int = 0              # edges recorded and not taken
    seconds: float = 0.0
    budget: int = 0
    finished: bool = False        # nothing left to try
    note: str = ""

    def line(self) -> str:
        state = "complete" if self.finished else f"{self.actions}/{self.budget} actions"
        return (f"{self.package}: {self.screens} screens, {self.edges} edges ({self.new_screens} "
                f"new screens, {self.new_edges} new edges, {self.commits} commits not taken), "
                f"{self.actions} actions, {self.seconds / 60:.1f} min, {state}")


class Explorer:
    def __init__(self, device: Device, knowledge: Knowledge, budget: int = 300,
                 progress: Progress | None = None, cancel: threading.Event | None = None):
        self.device = device
        self.knowledge = knowledge
        self.budget = budget
        self.progress = progress
        self.cancel = cancel or threading.Event()
        self.report: ExploreReport | None = None
        self.graph: AppGraph | None = None
        self.unreachable: set[int] = set()
        self.revealed: dict[int, set[str]] = {}     # keys a screen showed only after an action: tried next
        self.probed: tuple[int, str] | None = None  # (screen, field key) holding the probe word
        self.probe_keys: set[str] = set()           # what the probe word brought up there
        self.to_probe: dict[int, str] = {}          # screen -> its message box ("" once probed)

    # -- the crawl --------------------------------------------------------------------------------
    def explore(self, package: str) -> ExploreReport:
        t0 = time.perf_counter()
        g = self.graph = self.knowledge.graph(package)
        r = self.report = ExploreReport(package, budget=self.budget)
        self.unreachable = set(self.knowledge.info.get(package, {}).get("unreachable", []))
        try:
            self._launch()
            screen, here = self._visit()
            if g.home is None:
                g.home = here.id
                self.knowledge.save_app(g)
            while not self.cancel.is_set() and r.actions < self.budget:
                if here.id < 0:                  # left the app: back to its first screen
                    self._launch()
                    screen, here = self._visit()
                    if here.id < 0:
                        raise ExploreError(f"{package} does not open (in front: {screen.package})")
                todo = self._next(here)
                if (todo is None or todo[0] != here.id) and self.to_probe.get(here.id) and self.probed is None:
                    screen, here = self._probe(screen, here)      # (the rest of its page tried first)
                    continue
                if todo is None or todo[0] != here.id and not self._behind_probe(here, todo[0]):
                    screen, here = self._unprobe(screen, here)    # (before leaving its screen)
                if todo is None:
                    r.finished = True
                    break
                target, key, action = todo
                if target != here.id:
                    screen, here = self._goto(target)
                    if here.id != target:
                        self.unreachable.add(target)
                        continue
                screen, here = self._try(screen, here, key, action)
        except ActionError as exc:
            r.note = str(exc)
        finally:
            r.seconds = time.perf_counter() - t0
            r.screens, r.edges = len(g.screens), len(g.edges)
            info = self.knowledge.info.get(package, {})
            self.knowledge.save_app(g, unreachable=sorted(self.unreachable),
                                    actions=int(info.get("actions", 0)) + r.actions,
                                    seconds=float(info.get("seconds", 0.0)) + r.seconds,
                                    complete=r.finished)
            self._tell()
        return r

    def _next(self, here: UIScreen) -> tuple[int, str, str] | None:
        """The next (screen, key, action) to try: on this screen first, else the nearest screen
        with something left (unreachable ones skipped)."""
        g = self.graph
        todo = self._todo(here.id)
        if todo:
            return here.id, *todo[0]
        paths = g.paths_from(here.id)
        home_paths = g.paths_from(g.home) if g.home is not None else {}
        # (what the probe word opens first, while the word is there)
        order = sorted(g.screens, key=lambda s: (not self._behind_probe(here, s),
                                                 len(paths[s]) if s in paths else
                                                 1 + len(home_paths.get(s, [0] * 99)), s))
        for sid in order:
            if sid in self.unreachable or (sid not in paths and sid not in home_paths):
                continue
            todo = self._todo(sid)
            if todo:
                return sid, *todo[0]
        return None

    def _todo(self, sid: int) -> list[tuple[str, str]]:
        g = self.graph
        s = g.screens[sid]
        out = []
        for key, action in g.untried(sid):
            el = s.elements[key]
            group = self._group(s, el)
            if group and self._collapsed(s, group):
                continue
            out.append((key, action))
        for key, el in s.elements.items():       # list rows under one id: a few of them
            for action in ("tap", "long_press") if el.long else ("tap",):
                if (key, action) not in out and self._next_row(s, key, action) is not None:
                    out.append((key, action))
        fresh = self.revealed.get(sid, set())
        out.sort(key=lambda ka: (ka[0] not in fresh, s.elements[ka[0]].scroll, ka[1] != "tap"))
        return out

    def _next_row(self, s: UIScreen, key: str, action: str) -> str | None:
        """Another row's label to try under a list's id, or None: rows are sampled until two of
        them did the same (the rest would too) or ROW_CAP were tried."""
        el = s.elements[key]
        if el.kind != "button" or len(el.labels) < 2 or el.key.startswith(el.cls + ":") \
                or el.fixed and not el.varies:
            return None          # (one control showing another state: Send SMS, Schedule message)
        tried = [e for e in self.graph.edges_from(s.id) if e.key == key and e.action == action]
        if not tried:
            return None                          # its first try is an ordinary one
        useful = [(e.effect, e.dst) for e in tried if e.effect in NEW_SCREEN + SAME and e.effect != "none"]
        if len(tried) >= ROW_CAP or (len(useful) >= GROUP_SAMPLE and len(set(useful)) == 1):
            return None
        done = {e.label for e in tried}
        return next((label for label in el.labels if label not in done), None)

    # -- one element ------------------------------------------------------------------------------
    def _try(self, screen: Screen, here: UIScreen, key: str, action: str) -> tuple[Screen, UIScreen]:
        g, r = self.graph, self.report
        el = here.elements[key]
        on_form = any(x.kind in ("field", "password") for x in here.elements.values())
        # (a long press on what declares one runs its long-click handler, not its click: Send's
        # opens Schedule send)
        why = unsafe(el, here.kind, on_form) if action != "long_press" or not el.long else ""
        if not why and self._choice(el, here) and not self._checked(screen, key):
            why = "chooses"          # learned from the chosen item, as the others do the same
        if why:
            edge = UIEdge(0, here.id, key, action, "commit", label=el.label, sensitive=why)
            self.knowledge.save_edge(g, edge)
            r.commits += 1
            r.new_edges += 1
            return screen, here
        label = self._next_row(here, key, action)
        found = self._find(screen, here, key, label)
        if found is None:
            # not on the screen now (a row that needs data, a button that needs a state)
            edge = UIEdge(0, here.id, key, action, "untried", label=label or el.label,
                          detail={"missing": True})
            self.knowledge.save_edge(g, edge)
            return self._visit()
        screen, e = found
        self._act(action, e)
        after, there = self._visit(opener=e.label)
        if there.id == here.id and after.kind == "screen" and _words(after.title) \
                and _words(after.title) != _words(screen.title) \
                and keys_of(after)[0] != keys_of(screen)[0]:
            # a mode of the screen ("Create group" turns New conversation into New group, and
            # its rows then add people instead of opening a chat): a screen of its own, or the
            # rest of the first one would be learned in that mode. Titles compared without their
            # numbers: a timer's "00h 00m 01s" after a digit is the same screen holding data
            there = self.knowledge.save_screen(g, UIScreen.of(after, e.label))
            r.new_screens += 1
        edge = self._edge(here, key, action, screen, e, after, there)
        self.knowledge.save_edge(g, edge)
        r.new_edges += 1
        self._tell()
        if edge.effect == "focus" and self._box(here, e) and here.id not in self.to_probe:
            self.to_probe[here.id] = element_key(e)     # once the rest of the page is tried
        return self._restore(edge, here, after, there, e)

    def _edge(self, here: UIScreen, key: str, action: str, before: Screen, e: Element,
              after: Screen, there: UIScreen | None) -> UIEdge:
        edge = UIEdge(0, here.id, key, action, "none", label=e.label)
        if self._foreign(after.package):
            edge.effect = "external"
            edge.detail = {"package": after.package, "home": after.package in LAUNCHERS}
            return edge
        if there is not None and there.id != here.id:
            edge.effect = there.kind if there.kind != "screen" else "screen"
            edge.dst = there.id
            if after.kind == "screen" and after.title and after.title == e.label:
                edge.detail = {"titled": True}     # it opened a page named by what was tapped
            return edge
        now = {element_key(x): x for x in after.elements}
        twin = same_element(after, e)
        if e.checkable and twin is not None and twin.checked != e.checked:
            edge.effect, edge.detail = "toggle", {"checked": [e.checked, twin.checked]}
        elif twin is not None and twin.label != e.label:
            edge.effect, edge.detail = "relabel", {"labels": [e.label, twin.label]}
        elif twin is None and key in now and now[key].label != e.label and not e.in_list:
            edge.effect, edge.detail = "relabel", {"labels": [e.label, now[key].label]}
        elif e.editable:
            edge.effect = "focus"
        else:
            changed = changes(before, after)
            if changed:
                edge.effect, edge.detail = "content", {"changed": changed[:8]}
        return edge

    def _restore(self, edge: UIEdge, here: UIScreen, after: Screen, there: UIScreen,
                 e: Element) -> tuple[Screen, UIScreen]:
        """Back where the element was tried, as it was."""
        if edge.effect in ("toggle", "relabel"):
            twin = same_element(after, e) or next(
                (x for x in after.elements if element_key(x) == edge.key), None)
            if twin is not None and not unsafe(twin, there.kind, False):
                self._act("tap", twin)
                return self._visit()
            return after, there
        if edge.effect in ("content", "focus", "none"):
            return after, there
        if here.kind in ("sheet", "dialog", "menu") and here.id in self.graph.paths_from(there.id):
            return after, there      # a choice that closed its window: on a page that leads back to it
        if edge.effect == "external":
            self._count(self.device.key("back"))
            screen, now = self._visit()
            if now.id == here.id:
                return screen, now
            return self._reopen(here.id)
        # another window: close it the way a user would
        negative = next((x for x in after.elements if x.rid == "button2" or NEGATIVE.match(x.label.lower())),
                        None) if there.kind in ("dialog", "sheet") else None
        if negative is not None:
            self._act("tap", negative)
        else:
            self._count(self.device.key("back"))
        screen, now = self._visit()
        if now.id == here.id or here.id in self.graph.paths_from(now.id):
            return screen, now       # (or on a page that leads back to it: a sheet's picker closed)
        return self._reopen(here.id)

    # -- the probe word ------------------------------------------------------------------------------
    def _box(self, here: UIScreen, e: Element) -> bool:
        """An empty message box (showing only its hint, as first seen): a field on a page with no
        form to save, not a search."""
        known = here.elements.get(element_key(e))
        return here.kind == "screen" and e.editable and not e.password and known is not None \
            and (not e.text or e.text == known.label) \
            and not re.search(r"search", f"{e.label} {e.rid}", re.I) \
            and not any(POSITIVE.match(x.label.strip()) for x in here.elements.values())

    def _probe(self, screen: Screen, here: UIScreen) -> tuple[Screen, UIScreen]:
        """Type the probe word: what appears with text (a Send button) is tried next. Last on
        its page: typed into a recipient box it would filter away the list's rows."""
        key = self.to_probe[here.id]
        self.to_probe[here.id] = ""                  # (once)
        box = _field(screen, key)
        if box is None:
            return screen, here
        self._count(self.device.type_into(box, PROBE, clear=False))
        self.probed = (here.id, key)
        screen, here = self._visit()
        self.probe_keys = set(self.revealed.get(here.id, ()))
        return screen, here

    def _behind_probe(self, here: UIScreen, target: int) -> bool:
        """Whether the way to ``target`` starts with a control the probe word brought up (the
        Schedule send sheet behind Send): the word stays until that is explored."""
        path = self.graph.paths_from(here.id).get(target)
        return bool(path) and self.probed is not None and path[0].src == self.probed[0] \
            and path[0].key in self.probe_keys

    def _unprobe(self, screen: Screen, here: UIScreen) -> tuple[Screen, UIScreen]:
        """Erase the probe word, when its box is on the screen in front (leaving no draft)."""
        if self.probed is None or self.probed[0] != here.id:
            return screen, here
        box = _field(screen, self.probed[1])
        self.probed = None
        if box is None or box.text != PROBE:
            return screen, here
        self._count(self.device.erase(box))
        return self._visit()

    # -- moving about -----------------------------------------------------------------------------
    def _goto(self, target: int) -> tuple[Screen, UIScreen]:
        """Follow the graph to ``target``; the app afresh first when the way from here fails.
        Where it ended (not ``target`` when neither way got there)."""
        got = self._follow(target)
        if got is not None:
            return got
        return self._reopen(target)

    def _reopen(self, target: int) -> tuple[Screen, UIScreen]:
        self._launch()
        got = self._follow(target)
        if got is None:
            self.unreachable.add(target)
            self._launch()
            return self._visit()
        return got

    def _follow(self, target: int) -> tuple[Screen, UIScreen] | None:
        screen, here = self._visit()
        path = self.graph.paths_from(here.id).get(target)
        if path is None:
            return None
        for edge in path:
            src = self.graph.screens[edge.src]
            found = self._find(screen, src, edge.key, edge.label if self.graph.is_row(edge) else None)
            if found is None:
                return None
            screen, e = found
            self._act(edge.action, e)
            screen, here = self._visit()
            if here.id != edge.dst:
                return None
        return screen, here

    def _find(self, screen: Screen, here: UIScreen, key: str,
              label: str | None = None) -> tuple[Screen, Element] | None:
        """The element under ``key`` (the row showing ``label``) on screen, scrolling down to it
        (then back to the top) when it is below the fold."""
        want = here.elements.get(key)
        for i in range(MAX_SCAN_SWIPES + 1):
            for e in screen.elements:
                if element_key(e) == key and (label is None or e.label == label):
                    return screen, e
            if not screen.scrollable or (want is not None and label is None and i > want.scroll + 1):
                break
            self._count(self.device.swipe("up", screen))
            screen = self.device.observe()
        if screen.scrollable:
            self._to_top(screen)
        return None

    def _to_top(self, screen: Screen) -> Screen:
        for _ in range(MAX_SCAN_SWIPES):
            self._count(self.device.swipe("down", screen))
            after = self.device.observe()
            if keys_of(after)[0] == keys_of(screen)[0] and labels_of(after) == labels_of(screen):
                return after
            screen = after
        return screen

    def _visit(self, opener: str = "") -> tuple[Screen, UIScreen]:
        """Read the screen and place it in the graph (a new screen is registered and, if it
        scrolls, read to its end)."""
        g = self.graph
        screen = self.device.observe()
        if self._foreign(screen.package):
            return screen, self._outside(screen)
        known, _ = g.match(screen)
        if known is None:
            known = UIScreen.of(screen, opener)
            if screen.scrollable and screen.kind == "screen":
                screen = self._scan(screen, known)
            self.knowledge.save_screen(g, known)
            self.report.new_screens += 1
        else:
            fresh = self.knowledge.observe(g, known, screen, data=frozenset({PROBE}))
            if fresh:
                self.revealed[known.id] = set(fresh)
        return screen, known

    def _foreign(self, package: str) -> bool:
        """Another app (the home screen, or an app with its own icon): not explored from here.
        A package with no icon of its own (a picker another app opens) is part of this app."""
        own = self.graph.package
        return package != own and (package in LAUNCHERS or package in self.device.apps.values()
                                   or not package)

    def _outside(self, screen: Screen) -> UIScreen:
        """A stand-in for a window of another app (not part of this graph)."""
        return UIScreen(-1, screen.package, screen.activity, screen.kind, screen.title)

    def _scan(self, screen: Screen, known: UIScreen) -> Screen:
        first = screen
        for i in range(1, MAX_SCAN_SWIPES + 1):
            self._count(self.device.swipe("up", screen))
            after = self.device.observe()
            if labels_of(after) == labels_of(screen):
                break
            known.observe(after, scroll=i)
            screen = after
        if screen is not first:
            screen = self._to_top(screen)
        return screen

    def _launch(self) -> None:
        self._count(self.device.launch(self.graph.package, fresh=True))

    def _act(self, action: str, e: Element) -> None:
        self._count(self.device.long_press(e) if action == "long_press" else self.device.tap(e))

    def _count(self, command: str) -> None:
        self.report.actions += command.count(";") + 1
        if self.report.actions >= self.budget + 50:      # a runaway restore: stop
            raise ActionError(f"exploration went over its budget of {self.budget} actions")

    def _tell(self) -> None:
        if self.progress is not None and self.report is not None:
            self.report.screens, self.report.edges = len(self.graph.screens), len(self.graph.edges)
            self.progress(self.report)

    # -- groups -----------------------------------------------------------------------------------
    def _group(self, s: UIScreen, el: UIElement) -> str:
        """Like rows of a list (no id, one class) or number keys form a group; "" otherwise."""
        if NUMBER.match(el.label) and not el.key.startswith(("button", "#")) and "/" not in el.key:
            return "num:" + el.cls
        if el.fixed or not el.key.startswith(el.cls + ":"):
            return ""
        peers = [x for x in s.elements.values() if not x.fixed and x.key.startswith(el.cls + ":")]
        return "list:" + el.cls if len(peers) >= GROUP_MIN else ""

    def _collapsed(self, s: UIScreen, group: str) -> bool:
        """The group's first members did the same: the rest would too."""
        tried = [e for e in self.graph.edges_from(s.id) if e.action == "tap"
                 and e.effect not in ("untried", "none") and self._group(s, s.elements[e.key]) == group]
        if len(tried) < GROUP_SAMPLE:
            return False
        kinds = {(e.effect, e.dst if e.effect not in ("screen",) else None) for e in tried}
        dsts = {e.dst for e in tried}
        return len(kinds) == 1 and (len(dsts) == 1 or tried[0].effect != "screen")

    def _choice(self, el: UIElement, s: UIScreen) -> bool:
        return el.kind == "choice"

    def _checked(self, screen: Screen, key: str) -> bool:
        return any(element_key(e) == key and e.checked for e in screen.elements)


def _words(title: str) -> str:
    """A title without its numbers (the data a screen shows in it)."""
    return DIGITS.sub("#", title or "").strip()


def _field(screen: Screen, key: str) -> Element | None:
    """The editable element of ``key`` on ``screen`` (the probe word's box), if shown."""
    return next((x for x in screen.elements if element_key(x) == key and x.editable), None)
