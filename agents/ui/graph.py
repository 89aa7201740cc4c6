"""The UI transition graph an app is known by: abstract screens, their elements, and edges (an
action on an element of a screen -> what it did). Built by exploration (``explore.py``) and by
every verified step of an episode; read by the planner.

Abstraction (what makes two visits "the same screen"): the package, the window kind (screen,
dialog, menu, sheet) and the elements' keys. A key is an element's resource id when it has one
(so the rows of a list, which share one id, are one key, and data never makes a new screen), else
its class and label (a Settings row is known by its title). A screen's catalogue holds every key
seen on it at any scroll position, with how many swipes it takes to see it; the keys outside any
list are its fixed keys. A visit is localized to the known screen whose catalogue covers its keys
best (``match``).
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import asdict, dataclass, field, replace

from .screen import Element, Screen

SAME_SCREEN = 0.6          # a visit this alike to a known screen is that screen
SAME_TITLE = 0.8           # ...at least this alike with the same title and some elements in common
TITLE_DIFFERS = 0.75       # ...less alike when its title differs (Settings pages share their switches;
                           # a contact's page is titled with the contact's name, so not a veto)
MASK_DIGITS = re.compile(r"\d+")

# effects an edge may have
NEW_SCREEN = ("screen", "dialog", "menu", "sheet")          # opened another window
SAME = ("toggle", "relabel", "focus", "content", "none")     # stayed on the screen
OTHER = ("back", "external", "commit", "untried")            # went back, left the app, not taken


def element_key(e: Element) -> str:
    """An element's stable name on its screen (see the module's docstring): a list row without
    an id of its own (an alarm's card) is known by its class, as all its like rows are."""
    if e.rid:
        return e.rid
    if e.row:
        return f"row:{e.cls}"
    return f"{e.cls}:{e.label}"


RADIO = ("RadioButton", "CheckedTextView")


def element_kind(e: Element) -> str:
    if e.password:
        return "password"
    if e.editable:
        return "field"
    if e.checkable:
        return "choice" if e.check_cls in RADIO else "switch"
    return "button" if e.clickable else "item"


def title_key(title: str, opener: str = "") -> str:
    """A dialog's title as a key: digits masked, and the label of what opened it replaced by
    "{}" ("Change system language to {}?" is one dialog whichever language was tapped)."""
    if opener and len(opener) > 1 and opener.lower() in title.lower() and len(title) > len(opener) + 3:
        i = title.lower().index(opener.lower())
        title = title[:i] + "{}" + title[i + len(opener):]
    return "title:" + MASK_DIGITS.sub("#", title)


def title_matches(key: str, observed: str) -> bool:
    """Whether a known title key stands for an observed one (its "{}" matches anything)."""
    if key == observed or "{}" not in key:
        return key == observed
    pattern = ".+".join(re.escape(part) for part in key.split("{}"))
    return re.fullmatch(pattern, observed, re.S) is not None


def keys_of(screen: Screen, opener: str = "") -> tuple[set[str], set[str]]:
    """(all keys, fixed keys) of one observed screen; a dialog's title counts as a fixed key
    (dialogs share their buttons), see ``title_key``."""
    keys = {element_key(e) for e in screen.elements}
    fixed = {element_key(e) for e in screen.elements if not e.in_list}
    # the selected tab says which page of a tabbed screen this is (their other keys may match)
    selected = {"sel:" + element_key(e) for e in screen.elements if e.selected and not e.in_list}
    keys |= selected
    fixed |= selected
    if screen.kind != "screen" and screen.title:
        title = title_key(screen.title, opener)
        keys.add(title)
        fixed.add(title)
    return keys, fixed


@dataclass
class UIElement:
    """One key of a screen's catalogue."""
    key: str
    label: str                     # as first seen (a list row: the first row's)
    kind: str                      # button, switch, field, password, item
    cls: str = ""
    detail: str = ""               # its first detail (a summary, a description)
    long: bool = False             # takes a long press
    fixed: bool = True             # outside any list
    scroll: int = 0                # swipes (up) from the top of the screen before it shows
    labels: list[str] = field(default_factory=list)   # every label seen under this key (list rows)
    row: bool = False              # a list row or inside one
    varies: bool = False           # rows under this key showed different labels at once: the label is data


@dataclass
class UIScreen:
    id: int
    package: str
    activity: str
    kind: str
    title: str
    elements: dict[str, UIElement] = field(default_factory=dict)
    fixed: set[str] = field(default_factory=set)
    scrolls: bool = False
    entry: str = ""                # a value-entry widget it holds: "time" (a clock dial), "date" (a
                                   # calendar), "digits" (a keypad)
    explored: bool = False         # every element tried (or known to be unsafe to try)

    def catalogue(self) -> set[str]:
        return set(self.elements) | {k for k in self.fixed if k.startswith(("title:", "sel:"))}

    def add(self, e: Element, scroll: int = 0, rows: bool = True,
            data: frozenset[str] = frozenset()) -> UIElement | None:
        key = element_key(e)
        known = self.elements.get(key)
        if known is None and not rows and (e.in_list or ":" in key):
            # a list item an episode shows, in a list that scrolls or not (a language it added,
            # keyed by its own label): its data, gone after a reset
            return None
        if known is None:
            known = self.elements[key] = UIElement(key, e.label, element_kind(e), e.cls,
                                                   (e.details[:1] or [e.desc if e.text else ""])[0],
                                                   e.long_clickable, not e.in_list, scroll, [e.label],
                                                   e.row)
        elif e.label not in known.labels and len(known.labels) < 400 and (rows or not e.row) \
                and e.label.strip().lower() not in data:
            known.labels.append(e.label)
        if e.desc and e.desc != e.label and e.desc not in known.labels and len(known.labels) < 400 \
                and (rows or not e.row):
            known.labels.append(e.desc)          # a day toggle "S" is Saturday by its description
        known.long = known.long or e.long_clickable
        if not e.in_list:
            self.fixed.add(key)
        return known

    @classmethod
    def of(cls, screen: Screen, opener: str = "") -> "UIScreen":
        """A screen seen for the first time (``opener``: the label of what opened it)."""
        from .entry import entry_kind

        known = cls(0, screen.package, screen.activity, screen.kind, screen.title,
                    scrolls=bool(screen.scrollable), entry=entry_kind(screen))
        known.fixed |= {k for k in keys_of(screen, opener)[1] if k.startswith(("title:", "sel:"))}
        known.observe(screen)
        return known

    def observe(self, screen: Screen, scroll: int = 0, rows: bool = True,
                data: frozenset[str] = frozenset()) -> list[str]:
        """Add what a visit shows; the keys it had not seen. A key whose rows show different
        labels side by side (contacts, times) is data; one that repeats the same ("Expand
        alarm" on every card) or is seen alone ("Delete" on the one expanded card) is a control.
        ``rows=False`` (an episode's visit) adds no new labels to list rows: they are the data
        the episode made (an alarm it labelled 'meeting'), gone when the phone is reset; nor any
        label that is one of ``data`` (lower-case: the values the episode's task gives), which
        is what the episode put there — learned, the "Add label" button that then read 'meeting'
        was taken for a list of labelled rows, and the next task to label an alarm never took it."""
        fresh = [element_key(e) for e in screen.elements if element_key(e) not in self.elements]
        seen: dict[str, set[str]] = {}
        for e in screen.elements:
            self.add(e, scroll if element_key(e) in fresh else 0, rows, data)
            seen.setdefault(element_key(e), set()).add(e.label)
        for key, labels in seen.items():
            if len(labels) > 1 and key in self.elements:
                self.elements[key].varies = True
        return list(dict.fromkeys(fresh))

    def size(self) -> int:
        """How much the catalogue holds (keys and labels under them): a visit that grew it has
        something to save — a button reading "Pin" on one row's selection and "Unpin" on another's
        is one key with two labels, and both are what a task may ask for."""
        return sum(1 + len(el.labels) + el.varies for el in self.elements.values())

    def to_json(self) -> dict:
        d = asdict(self)
        d["fixed"] = sorted(self.fixed)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "UIScreen":
        d = dict(d)
        d["elements"] = {k: UIElement(**v) for k, v in d.get("elements", {}).items()}
        d["fixed"] = set(d.get("fixed", ()))
        return cls(**d)


@dataclass
class UIEdge:
    id: int
    src: int
    key: str
    action: str                    # tap, long_press, type
    effect: str                    # see NEW_SCREEN / SAME / OTHER
    dst: int | None = None         # the screen it led to (a new window, or back)
    detail: dict = field(default_factory=dict)   # labels/states before and after, package left to...
    label: str = ""                # the element's label when tried
    sensitive: str = ""            # why it was not taken (a commit a user must confirm)
    ok: int = 0                    # times it did what it predicts
    failed: int = 0                # times it did not

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "UIEdge":
        return cls(**d)


@dataclass
class AppGraph:
    """One app's screens and edges (ids are the store's)."""
    package: str
    screens: dict[int, UIScreen] = field(default_factory=dict)
    edges: dict[int, UIEdge] = field(default_factory=dict)
    home: int | None = None        # the screen the app opens on

    # -- localizing a visit ----------------------------------------------------------------------
    def match(self, screen: Screen) -> tuple[UIScreen | None, float]:
        """The known screen this visit is, with how alike (0..1); (None, best) below SAME_SCREEN."""
        keys, fixed = keys_of(screen)
        best, score = None, 0.0
        for s in self.screens.values():
            if s.package != screen.package or s.kind != screen.kind:
                continue
            sim = similarity(keys, fixed, s)
            if s.kind == "screen" and s.title and screen.title:
                if s.title != screen.title and s.id not in self.data_titled():
                    sim *= TITLE_DIFFERS
                elif sim >= 0.3:            # same title, some elements gone (a switch turned off hides rows)
                    sim = max(sim, SAME_TITLE)
            if sim > score or (sim == score and best is not None and s.title == screen.title
                               and best.title != screen.title):
                best, score = s, sim
        return (best, score) if score >= SAME_SCREEN else (None, score)

    # -- edges -------------------------------------------------------------------------------------
    def edges_from(self, screen_id: int) -> list[UIEdge]:
        return [e for e in self.edges.values() if e.src == screen_id]

    def edges_of(self, screen_id: int) -> list[UIEdge]:
        """A screen's edges, and for its elements never tried here, the edges of the same
        element on a sibling screen (the same page in another state: the same tab selected, or
        the same title) — an alarm list with a card expanded still has its Add alarm button."""
        stamp = (len(self.screens), len(self.edges))
        if getattr(self, "_of_stamp", None) != stamp:
            self._of_cache: dict[int, list[UIEdge]] = {}
            self._of_stamp = stamp
        if screen_id not in self._of_cache:
            own = self.edges_from(screen_id)
            s = self.screens.get(screen_id)
            out = [e for e in own if e.effect != "untried"]
            if s is not None:
                tried = {(e.key, e.action) for e in out}
                tabs = {k for k in s.fixed if k.startswith("sel:")}
                for t in self.screens.values():
                    if t.id == screen_id or t.kind != s.kind or t.package != s.package:
                        continue
                    if not ((tabs and tabs & t.fixed) or (s.title and t.title == s.title)):
                        continue
                    for e in self.edges_from(t.id):
                        if e.key in s.elements and (e.key, e.action) not in tried and e.effect in NEW_SCREEN:
                            out.append(replace(e, src=screen_id))
                            tried.add((e.key, e.action))
                for t in self.screens.values():       # a tab opens its page from wherever it shows
                    for e in self.edges_from(t.id):
                        dst = self.screens.get(e.dst) if e.dst is not None else None
                        if e.key in s.fixed and (e.key, e.action) not in tried and e.effect in NEW_SCREEN \
                                and dst is not None and "sel:" + e.key in dst.fixed and dst.id != screen_id:
                            out.append(replace(e, src=screen_id))
                            tried.add((e.key, e.action))
            tried = {(e.key, e.action) for e in out}
            out += [e for e in own if e.effect == "untried" and (e.key, e.action) not in tried]
            self._of_cache[screen_id] = out
        return self._of_cache[screen_id]

    def edge(self, src: int, key: str, action: str, label: str | None = None) -> UIEdge | None:
        """The edge for an element (for a list row, the one tried on the row showing ``label``
        when there is one, else the most common effect of its rows)."""
        found = [e for e in self.edges_of(src) if e.key == key and e.action == action]
        if not found:
            return None
        for e in found:
            if label is not None and e.label == label:
                return e
        useful = [e for e in found if e.effect not in ("untried", "external", "commit")] or found
        counts: dict = {}
        for e in useful:
            counts[(e.effect, e.dst)] = counts.get((e.effect, e.dst), 0) + 1
        best = max(counts, key=counts.get)
        return next(e for e in useful if (e.effect, e.dst) == best)

    def untried(self, screen_id: int) -> list[tuple[str, str]]:
        """(key, action) pairs of a screen no edge records yet."""
        s = self.screens[screen_id]
        done = {(e.key, e.action) for e in self.edges_from(screen_id)}
        out = []
        for key, el in s.elements.items():
            for action in actions_for(el):
                if (key, action) not in done:
                    out.append((key, action))
        return out

    def data_titled(self) -> set[int]:
        """Screens titled with the row that opened them (a contact's page with the contact's
        name): another contact's page differs in its title as in its data, not as a screen."""
        stamp = (len(self.screens), len(self.edges))
        if getattr(self, "_titled_stamp", None) != stamp:
            # (or with a text of the row: an alarm's card, expanded, is titled by its days)
            rows = {sid: {lab for el in s.elements.values() if el.row for lab in el.labels}
                    for sid, s in self.screens.items()}
            self._titled = {e.dst for e in self.edges.values() if e.dst in self.screens and e.src in self.screens
                            and self._in_list(e) and e.label and self.screens[e.dst].title
                            and (e.label == self.screens[e.dst].title or self.screens[e.dst].title in rows[e.src])}
            self._titled_stamp = stamp
        return self._titled

    def is_row(self, e: UIEdge) -> bool:
        """Whether an edge taps one of a list's rows (which one must be chosen) — or opens the
        page of one object from elsewhere (a starred message's sender opens that person's chat)."""
        return self._in_list(e) or (bool(e.detail.get("titled")) and e.dst in self.data_titled())

    def _in_list(self, e: UIEdge) -> bool:
        el = self.screens[e.src].elements.get(e.key) if e.src in self.screens else None
        # (a control outside any list that showed another label on another visit is no choice
        # to make: a contact page's one "Label" chip reads "Add to label" on an unlabelled contact)
        return el is not None and (el.row or len(el.labels) > 1 and (el.varies or not el.fixed))

    def paths_from(self, start: int, avoid: set[int] = frozenset(), rows: bool = True) -> dict[int, list[UIEdge]]:
        """Shortest known way (edges that lead to another screen) from ``start`` to every screen
        reachable, leaving out edges in ``avoid``, edges that failed more than they worked and,
        unless ``rows``, edges through a list's rows."""
        out: dict[int, list[UIEdge]] = {start: []}
        queue = deque([start])
        by_src: dict[int, list[UIEdge]] = {}
        for sid in self.screens:
            for e in self.edges_of(sid):
                if e.dst is not None and e.effect in NEW_SCREEN + ("back",) and e.id not in avoid \
                        and e.failed <= e.ok and (rows or not self.is_row(e)):
                    by_src.setdefault(e.src, []).append(e)
        while queue:
            s = queue.popleft()
            for e in sorted(by_src.get(s, ()), key=lambda e: (self.is_row(e), e.id)):
                if e.dst not in out:
                    out[e.dst] = out[s] + [e]
                    queue.append(e.dst)
        return out

    def depths(self) -> dict[int, int]:
        """Edges from the app's first screen to every screen (cached until the graph grows)."""
        stamp = (len(self.screens), len(self.edges))
        if getattr(self, "_depth_stamp", None) != stamp:
            self._depth = {k: len(v) for k, v in self.paths_from(self.home).items()} if self.home else {}
            self._depth_stamp = stamp
        return self._depth

    def way_labels(self, screen_id: int) -> list[str]:
        """The labels tapped on the shortest way from the app's first screen to this one ("Add
        alarm" says what the time picker it opens is for)."""
        if self.home is None:
            return []
        path = self.paths_from(self.home).get(screen_id) or []
        return [e.label for e in path]

    def breadcrumb(self, screen_id: int) -> list[str]:
        """The titles on the shortest way from the app's first screen to this one."""
        if self.home is None or screen_id not in self.screens:
            return []
        path = self.paths_from(self.home).get(screen_id)
        if path is None:
            return [self.screens[screen_id].title]
        titles = [self.screens[self.home].title] + [self.screens[e.dst].title or e.label for e in path]
        return [t for t in titles if t]


def actions_for(el: UIElement) -> list[str]:
    if el.kind == "item":
        return ["long_press"] if el.long else []
    acts = ["tap"]
    if el.long:
        acts.append("long_press")
    return acts


def similarity(keys: set[str], fixed: set[str], known: UIScreen) -> float:
    """How well a known screen explains a visit: its catalogue covers the visit's keys, and the
    visit shows the screen's fixed keys (a list scrolled away is no reason to doubt)."""
    titles = [k for k in known.fixed if k.startswith("title:") and "{}" in k]
    if titles:                 # a title with a wildcard stands for the observed one
        keys = {next((t for t in titles if k.startswith("title:") and title_matches(t, k)), k) for k in keys}
        fixed = {next((t for t in titles if k.startswith("title:") and title_matches(t, k)), k) for k in fixed}
    cat = known.catalogue()
    tabs, known_tabs = {k for k in keys if k.startswith("sel:")}, {k for k in known.fixed if k.startswith("sel:")}
    if tabs and known_tabs and not tabs & known_tabs:
        return 0.0                       # another tab of the same screen
    if not keys and not cat:
        return 1.0
    covered = len(keys & cat)
    missing_fixed = len(known.fixed - keys)
    extra_fixed = len(fixed - cat)
    return covered / (len(keys) + missing_fixed + extra_fixed) if keys or known.fixed else 0.0
