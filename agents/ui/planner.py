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
from .goals import VALUE_KINDS, Goal, GoalFinder, shaped
from .graph import NEW_SCREEN, AppGraph, UIEdge, UIScreen, element_key
from .progress import Progress
from .relevance import Relevance
from .screen import Element, Screen
from .slots import Slot, norm, split_name

SWITCH_MARGIN = 0.35            # a new goal must beat the current one by this much
NEAR = {0: 0.4, 1: 0.2, 2: 0.1, 3: 0.0}   # a goal this many edges away
MAX_ROW_SCROLLS = 6
REMOVE = re.compile(r"\b(remove|delete|dismiss|take .+ off)\b", re.I)
CREATE = re.compile(r"\b(create|new|make a (?:new )?contact|add a (?:new )?contact)\b", re.I)
POSITIVE = re.compile(r"^(ok|save|done|apply|confirm|set|start|add|create|send|yes|next|update|connect)$", re.I)
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
    apps: dict[str, str] = {}            # app name -> package (the agent sets the device's)

    def __init__(self, task, relevance: Relevance, graphs: list[AppGraph], recall=None):
        self.task = task
        self.rel = relevance
        self.graphs = graphs
        self.finder = GoalFinder(task, relevance, graphs, recall)

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
        from .relevance import words_of

        g = next((x for x in self.graphs if x.package == self.apps.get(name)), None)
        if g is None or g.home is None or g.home not in g.screens:
            return False
        home = g.screens[g.home]
        tabs = [e.label for e in home.elements.values() if e.fixed and not e.row and e.cls == "FrameLayout"]
        return bool(words_of(home.title, *tabs) & task_words)

    def _titles(self, package: str) -> list[str]:
        g = next((x for x in self.graphs if x.package == package), None)
        return [s.title for s in g.screens.values() if s.title and s.kind == "screen"] if g else []

    def app_words(self, apps: dict[str, str]) -> dict[str, set[str]]:
        """Each explored app's vocabulary: its name, its screens' titles and labels."""
        if not hasattr(self, "_app_words"):
            from .relevance import words_of

            self._app_words = {}
            for name, pkg in apps.items():
                g = next((x for x in self.graphs if x.package == pkg and x.screens), None)
                if g is not None:
                    self._app_words[name] = words_of(name, *(s.title for s in g.screens.values()),
                                                     *(e.label for s in g.screens.values()
                                                       for e in s.elements.values() if e.fixed))
        return self._app_words

    def finished(self, p: Progress) -> bool:
        """A goal was reached and nothing the task gave is left to use (a name left over counts
        only when some goal would still use it)."""
        if not p.reached or p.values_left() or p.pending:
            return False
        names = [i for i in p.unused() if self.task.slots[i].kind == "name"]
        if not names:
            return True
        for goal in self.finder.goals(p.unused(), exclude=p.done_ids(), limit=3):
            for i in names:
                if i in goal.covers and self.rel.slot_hits(goal.label, [self.task.slots[i]])[0] >= 0.8:
                    return False
        return True

    def rank_apps(self, apps: dict[str, str]) -> list[tuple[str, float]]:
        """The explored apps, most likely to hold the task first (see ``open_app_steps``)."""
        return [(s.text, s.score) for s in self.open_app_steps(apps, None) if s.action == "open_app"]

    def commit(self, package: str) -> None:
        """Plan inside this app only (its graph holds the pickers it opens)."""
        self.finder.graphs = [g for g in self.graphs if g.package == package] or self.graphs
        self.finder._rows.clear()

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
        from .relevance import words_of

        words = self.app_words(apps)
        names = [n for n in words if n in best]
        titles = {n: f"{n} app: " + ", ".join(t for t in self._titles(apps[n])[:12]) for n in names}
        task_words = set(self.rel.words)
        for name, sem in zip(names, self.rel.semantic([titles[n] for n in names])):
            # the app's own name said in the task ("a contact", "the alarm": the app that keeps
            # them) first; then the words of its screens, what it means, and its best goal
            said = 2.0 if words_of(name) & task_words or self._kept_by(name, task_words) else 0.0
            best[name] = said + 1.0 * self.rel.lexical_in(words[name]) + 1.5 * sem + 0.3 * best[name] \
                + 0.5 * self._holds(apps[name])
        for name in apps:                 # named as an app is ("in Messages", "Google Clock")
            if re.search(rf"\b{re.escape(name)}\b", self.task.text):
                best[name] = best.get(name, 0.0) + 2.0
        steps = [Step("open_app", text=name, why=f"open {name}", score=score)
                 for name, score in sorted(best.items(), key=lambda kv: -kv[1])]
        if screen is not None and screen.package not in ("", *LAUNCHERS):
            steps.append(Step("home", why="go to the home screen", score=-1.0))
        return steps or [Step("home", why="go to the home screen")]

    # -- the steps ------------------------------------------------------------------------------
    _title = ""          # the screen in front's title (a dialog's says what its field is for)

    def steps(self, screen: Screen, g: AppGraph, here: UIScreen | None, p: Progress) -> list[Step]:
        self._title = screen.title if screen.kind != "screen" else ""
        live = None
        if here is not None:          # the objects this screen's rows show (the alarm, the contact)
            rows = [e for e in screen.elements if e.row]
            live = (here.id, {i for i in p.unused() + sorted(p.used)
                              if any(self._hit(e, [i], screen)[0] >= 0.8 for e in rows)},
                    {element_key(e): e.label for e in screen.elements if not e.row})
            # a value shown by a row names that row's object ("the alarm labelled 'meeting'"): it
            # is chosen, not typed
            p.ident |= {i for i in live[1] if not p.reached and i not in p.used}
            self.finder.ident = p.ident
        goals = self.finder.goals(p.unused(), exclude=p.done_ids(), limit=30, live=live)
        if here is not None:          # nearer goals first: what is on this screen beats a like one elsewhere
            dist = {k: len(v) for k, v in g.paths_from(here.id, avoid=p.failed_edges).items()}
            for goal in goals:
                d = dist.get(goal.screen) if goal.screen in g.screens else None
                goal.score += NEAR.get(d, -0.1 if d is not None else -0.3) if goal.key else 0.0
            goals.sort(key=lambda x: -x.score)
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
            at_start = here is not None and g.depths().get(here.id, 1) == 0 and screen.kind == "screen"
            out.append(Step("stop", why="no way forward from here", score=0.0) if at_start
                        else Step("back", why="go back", score=0.05))
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
        if owner is not g:                  # the goal is in the app the agent works in: open it
            name = next((n for n, pkg in self.apps.items() if pkg == owner.package), None)
            return [Step("open_app", text=name, goal=goal, score=goal.score + 0.5,
                         why=f"open {name} (for {goal.label})")] if name else []
        if here is not None and (goal.screen == here.id or self._same_page(goal, screen, g, here)):
            return self._at_goal(goal, screen, g, here, p)
        if here is None:
            return []
        route = self._route(g, here, goal, p)
        if route is None:
            return []
        edge = route[0]
        step = self._follow(edge, screen, g, here, p)
        if step is None and edge.id in p.failed_edges:       # that list did not have it: replan once
            route = self._route(g, here, goal, p)
            step = self._follow(route[0], screen, g, here, p) if route else None
        if step is not None:
            step.goal = goal
            step.score = goal.score + 0.5 - 0.02 * len(route)
            step.why = f"{step.why} (on the way to {goal.label or 'the goal'})"
        return [step] if step is not None else []

    def _same_page(self, goal: Goal, screen: Screen, g: AppGraph, here: UIScreen) -> bool:
        """Another known screen that shows the goal's element on a page of the same title (a
        Settings page with its switch off shows fewer rows: two screens in the graph)."""
        other = g.screens.get(goal.screen)
        return other is not None and bool(goal.key) and bool(screen.title) and other.title == screen.title and \
            other.kind == screen.kind and any(element_key(e) == goal.key for e in screen.elements)

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
        named = [e for e in els if e.label == goal.label or e.desc == goal.label]
        if len(els) > 1 and named and len(set(x.label for x in els)) > 1 and not any(
                e.row and here.elements.get(goal.key, None) is not None and here.elements[goal.key].varies
                for e in els):
            el = named[0]                       # the option the task names
        else:
            el = self._row(els, p, screen) if len(els) > 1 or els[0].row else els[0]
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
        hit, which = self._hit(el, p.unused(), screen)
        slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
        return [Step(goal.action if goal.action != "type" else "tap", el, slot=slot, edge=edge, goal=goal,
                     expect=edge.dst if edge is not None and edge.effect in NEW_SCREEN else None,
                     why=f"{goal.action} {el.label!r} " + _effect(g, edge), score=base, finishes=True)]

    def _fill(self, screen: Screen, p: Progress) -> list[Step]:
        """Type the slots this screen's fields take (a form is filled before it is saved); times
        and durations are set on their dial or keypad instead (``_entry``)."""
        if entry_kind(screen):
            return []
        fields = [e for e in screen.elements if e.editable and not e.password]
        secret = [e for e in screen.elements if e.editable and e.password]
        left = [i for i in p.unused() if self.task.slots[i].kind in VALUE_KINDS + ("name",)
                and self.task.slots[i].kind not in ("time", "duration")]
        if not left or not (fields or secret):
            return []
        out = []
        for e in fields + secret:
            if p.typed.get(element_key(e)):
                continue
            slot = self._slot_for_field(e, p)
            if slot is not None:
                text = self._text_for(e, self.task.slots[slot])
                uses = slot
                if text != self.task.slots[slot].text and any(     # a first name: the last name is left
                        f is not e and not p.typed.get(element_key(f)) and
                        self._text_for(f, self.task.slots[slot]) not in (text, self.task.slots[slot].text)
                        for f in fields):
                    uses = None
                out.append(Step("type", e, text, uses, why=f'type "{text}" in {e.label}'))
        return out[:1]

    def _slot_for_field(self, e: Element, p: Progress) -> int | None:
        """The slot a field takes: by its kind (a phone number, an email…) and the words next to
        the slot in the task ("works at Acme" goes to Company)."""
        label = " ".join([e.label, e.desc, e.rid.replace("_", " "), self._title]).lower()
        best, score = None, 0.0
        for i in p.unused():
            s = self.task.slots[i]
            if s.kind in ("time", "duration", "ordinal", "day"):
                continue
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
                        p.used.add(i)          # the picker shows it: confirmed with its OK
                        p.pending.add(i)
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
                        p.pending.add(i)
                        return None
                    action, el, text = nxt
                    return Step(action, el, text, why=f"enter {s.text}: tap {el.label}")
        return None

    # -- rows and routes ---------------------------------------------------------------------------
    def _hit(self, e: Element, slots: list[int], screen: Screen | None = None) -> tuple[float, Slot | None]:
        """The slot an element shows best (its label, description or a text inside it, or in
        the list row it belongs to: an alarm's switch is known by the alarm's time and label)."""
        best, which = 0.0, None
        texts = [e.label, e.desc] + e.texts[:6]
        if screen is not None and e.row:
            texts += screen.row_texts(e)[:12]
        for text in dict.fromkeys(texts):
            if text:
                m, w = self.rel.slot_hits(text, [self.task.slots[i] for i in slots])
                if m > best:
                    best, which = m, w
        return best, which

    def _row(self, els: list[Element], p: Progress, screen: Screen | None = None) -> Element | None:
        """Of a list's rows, the one showing an unused slot (the task's contact, alarm…), or the
        only one; None when the task names one and it is not on screen."""
        best, score, rank = None, 0.0, -1.0
        for e in els:        # a row showing a slot still to use beats one showing a slot used
            fresh, old = self._hit(e, p.unused(), screen)[0], self._hit(e, sorted(p.used), screen)[0]
            m = max(fresh, old)
            r = fresh + 0.5 if fresh >= 0.5 else old
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

    def _find_row(self, screen: Screen, here: UIScreen, goal: Goal | None, p: Progress, base: float) -> list[Step]:
        """The task's object is not on screen: scroll the list down to it, then search for it."""
        if screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
            return [Step("swipe", text="up", goal=goal, score=base - 0.1, why="scroll to find it")]
        search = next((e for e in screen.elements if not e.editable and
                       re.search(r"\bsearch\b", f"{e.label} {e.desc} {e.rid}", re.I)), None)
        if search is not None and not p.acted[(here.id, element_key(search), search.label, "tap")]:
            return [Step("tap", search, goal=goal, score=base - 0.1, why="search for it")]
        return []

    def _swipe_away(self, screen: Screen, here: UIScreen | None, p: Progress) -> list[Step]:
        """To remove a row the task names from a list that has no delete button for it (a
        world clock's city): swipe it away — a low-scored last resort, so a known delete wins."""
        if here is None or not REMOVE.search(self.task.text):
            return []
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone", "text")]
        for e in screen.elements:
            if e.row and e.owner < 0 and not e.editable:
                m, which = self._hit(e, names, screen)
                if m >= 0.8:
                    slot = next(i for i in names if self._hit(e, [i], screen)[0] == m)
                    goal = Goal(here.id, element_key(e), "swipe_away", "commit", e.label, 1.0)
                    return [Step("swipe_away", e, slot=slot, goal=goal, finishes=True, score=1.0,
                                 why=f"swipe {e.label!r} away")]
        return []

    def values(self) -> set[int]:
        """The slots that are values to enter, not names of objects to find."""
        return {i for i, s in enumerate(self.task.slots) if s.kind in VALUE_KINDS}

    def _select(self, screen: Screen, here: UIScreen | None, p: Progress) -> list[Step]:
        """A row here showing the object the task names (the contact, the conversation): the
        object is chosen before anything is done to it — unless the task creates it."""
        if CREATE.search(self.task.text):
            return []
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone")]
        if not names:
            return []
        best, hit = None, 0.0
        for e in screen.elements:
            if e.row and (e.clickable or e.long_clickable) and not e.editable:
                m, which = self._hit(e, names, screen)
                if m > hit:
                    best, hit = e, m
        if best is None or hit < 0.8:
            return []
        slot = next(i for i in names if self._hit(best, [i], screen)[0] == hit)
        return [Step("tap" if best.clickable else "long_press", best, slot=slot, score=1.4 + 0.3 * hit,
                     why=f"open {best.label!r}, the one the task names")]

    def _route(self, g: AppGraph, here: UIScreen, goal: Goal, p: Progress) -> list[UIEdge] | None:
        """The way from here to the goal's screen; through the row of an object the task names
        when the way passes a list of such rows."""
        paths = g.paths_from(here.id, avoid=p.failed_edges)
        direct = g.paths_from(here.id, avoid=p.failed_edges, rows=False).get(goal.screen) or paths.get(goal.screen)
        best = direct
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone", "time", "text")]
        if CREATE.search(self.task.text):       # a new object: its name is typed, not looked for
            names = [i for i in names if self.task.slots[i].kind not in ("name", "phone")]
        if not names:
            return best
        ways = []
        for e in (x for sid in paths for x in g.edges_of(sid)):
            if e.dst is None or e.effect not in NEW_SCREEN or e.id in p.failed_edges:
                continue
            src = g.screens[e.src]
            el = src.elements.get(e.key)
            if el is None or not g.is_row(e):
                continue              # not a list of rows
            # the object is listed on that screen (any of its rows shows the slot: an alarm's
            # card shows its time, its expand arrow is chosen by the card it is in)
            labels = [lab for x in src.elements.values() if x.row or len(x.labels) > 1 for lab in x.labels]
            if not any(self.rel.slot_hits(lab, [self.task.slots[i]])[0] >= 0.5 for lab in labels for i in names) \
                    and not (el.varies and any(shaped(lab, self.task.slots[i]) for lab in el.labels for i in names
                                               if i not in self.values())):
                continue
            rest = g.paths_from(e.dst, avoid=p.failed_edges).get(goal.screen)
            if rest is None:
                continue
            ways.append((len(paths[e.src]) + 1 + len(rest), len(rest), paths[e.src] + [e] + rest))
        if ways:                       # the object the task names is chosen on the way
            best = min(ways, key=lambda w: (w[0], w[1]))[2]
        return best

    def _follow(self, edge: UIEdge, screen: Screen, g: AppGraph, here: UIScreen, p: Progress) -> Step | None:
        els = [e for e in screen.elements if element_key(e) == edge.key]
        el = self._row(els, p, screen) if els and (len(els) > 1 or els[0].row) else (els[0] if els else None)
        if el is None:
            found = self._find_row(screen, here, None, p, 1.0)
            if not found and g.is_row(edge):
                p.failed_edges.add(edge.id)     # the object is not in this list: another way to it
            return found[0] if found else None
        slot = None
        if len(els) > 1 or not here.elements.get(edge.key, None) or len(here.elements[edge.key].labels) > 1:
            hit, which = self._hit(el, p.unused(), screen)
            slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
            if slot is None:
                slot = next((i for i in p.unused() if self.task.slots[i].kind == "ordinal"), None)
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
            if e.row:
                continue                  # a list row is chosen for the object it shows, on a route
            hit, which = self._hit(e, p.unused())
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
        for s in fill:      # a search opened to find the task's object is typed into at once
            searching = re.search(r"search", f"{s.element.label} {s.element.rid}", re.I) and \
                self.task.slots[s.slot].kind in ("name", "phone")
            s.score = 3.0 if searching else 1.2
        out += self._select(screen, here, p)
        out += self._swipe_away(screen, here, p)
        entry = self._entry(screen, p, None)
        if entry is not None:                    # a dial or keypad here takes a time or duration
            entry.score = 2.5
            out.append(entry)
        if p.pending:                            # values entered here wait for their OK/Start
            confirm = next((e for e in screen.elements if e.rid == "button1" or POSITIVE.match(e.label.strip())),
                           None)
            if confirm is not None and here is not None:
                goal = Goal(here.id, element_key(confirm), "tap", "commit", confirm.label, 2.0)
                out.append(Step("tap", confirm, goal=goal, finishes=True, score=2.0,
                                why=f"tap {confirm.label!r} to confirm what was entered"))
        return out + fill


def _effect(g: AppGraph, edge: UIEdge | None) -> str:
    from .goals import effect_text

    return effect_text(g, edge) if edge is not None else ""


def normalized(text: str) -> str:
    return norm(text)
