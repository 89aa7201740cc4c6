"""The planner: the steps worth taking next on the screen in front, best first, each with what
it should lead to (so the agent can check it did) and a line saying so (what the model reads).

Per step: find the goals (``goals.py``) and keep working on the current one unless a clearly
better one shows up; on the goal's screen, first type the slots its fields take and set its dial
or keypad (``entry.py``) or step its slider (``stepper.py``), then act on the goal; elsewhere,
take the first step of the way to it (``routes.py``). Elements of the screen in front that show
a slot or the task's words join in (a Send button appears only once a message is typed).
"""
from __future__ import annotations

import re

from . import stepper
from .apps import AppChooser
from .forms import Forms, field_id, is_search
from .goals import Goal, GoalFinder, comparative, extreme, other_action
from .graph import NEW_SCREEN, AppGraph, UIScreen, element_key
from .objects import MAX_ROW_SCROLLS, Objects
from .progress import Progress
from .routes import Routes
from .relevance import Relevance
from .screen import Element, Screen
from .slots import slot_match
from .step import NEGATIVE, POSITIVE, SELECTING, Step, effect_line

THE_NAMED = re.compile(r"\bthe (\w+ ){1,2}(labell?ed|named|called|titled|with the (label|name))\s*[\"'‘“]?$", re.I)
SWITCH_MARGIN = 0.35            # a new goal must beat the current one by this much
NEAR = {0: 0.4, 1: 0.2, 2: 0.1, 3: 0.0}   # a goal this many edges away


def typed_as(label: str, task: str) -> bool:
    """Whether the task gives a detail's type in these words ("a work number", "her home email"),
    not merely the word ("they now work at Tidewater")."""
    return bool(label.strip()) and re.search(rf"\b{re.escape(label.strip())} (?:phone |mobile )?(?:number|phone|e-?mail|"
                                             rf"address)\b", task, re.I) is not None


class Planner:
    apps: dict[str, str] = {}            # app name -> package (the agent sets the device's)

    def __init__(self, task, relevance: Relevance, graphs: list[AppGraph], recall=None):
        self.task = task
        self.rel = relevance
        self.graphs = graphs
        self.finder = GoalFinder(task, relevance, graphs, recall)
        self.forms = Forms(task)
        self.objects = Objects(task, relevance)
        self.routes = Routes(task, relevance, self.finder, self.objects)
        self._said_choice: Goal | None = None   # a choice the task's words name, near (see _local)
        # "the alarm labeled 'Bin day'": a quoted value after "the <thing> labeled" names an
        # object that is there, to choose — not a value to enter
        self.naming = {i for i, sl in enumerate(task.slots) if sl.kind == "text"
                       and THE_NAMED.search(task.text[:sl.start])}

    def finished(self, p: Progress) -> bool:
        """A goal was reached and nothing the task gave is left to use (a name left over counts
        only when some goal would still use it)."""
        if not p.reached or p.values_left() or p.pending or p.selecting:
            return False
        if self.again(p):
            return False          # "Add Ben and Emily to Work": done for Ben, Emily is next
        if any(i in self.finder.known_names() for i in p.unused()):
            return False          # a quoted name the task gives ('Life', 'Argo Navis') is still to choose
        names = [i for i in p.unused() if self.task.slots[i].kind == "name"]
        if not names:
            return True
        new = self.finder.made
        if new and any(i in slots | like for g in self.finder.graphs for slots, like, _ in self.finder._row_slots(g)
                       for i in names if i not in new):
            return False          # the task makes something for someone a list shows, still to
                                  # choose ("create a label called Neighbors and add Oscar Ortega")
        for goal in self.finder.goals(p.unused(), exclude=p.done_ids(), limit=3):
            for i in names:
                if i in goal.covers and self.rel.slot_hits(goal.label, [self.task.slots[i]])[0] >= 0.8:
                    return False
        return True

    def again(self, p: Progress) -> set[tuple]:
        """Goals reached on one named object that the task asks for others named with it too
        ("Add Ben Carter and Emily Chen to Work"): done again, for the next of them."""
        if p.object is None or not p.reached_on:
            return set()
        peers = self.task.together(p.object)
        due = {gid for gid, objects in p.reached_on.items() if p.object not in objects and objects & peers}
        if due:
            return due            # the next one is chosen: done for it too
        return set(p.reached_on) if peers & set(p.unused()) else set()

    def rank_apps(self, apps: dict[str, str]) -> list[tuple[str, float]]:
        """The explored apps, most likely to hold the task first (``apps.AppChooser``)."""
        return AppChooser(self.task, self.rel, self.graphs, self.finder, apps).rank()

    def open_app_steps(self, apps: dict[str, str], screen: Screen | None) -> list[Step]:
        return AppChooser(self.task, self.rel, self.graphs, self.finder, apps).open_app_steps(apps, screen)

    def commit(self, package: str) -> None:
        """Plan inside this app only (its graph holds the pickers it opens)."""
        self.finder.graphs = [g for g in self.graphs if g.package == package] or self.graphs
        self.finder._rows.clear()

    # -- the steps ------------------------------------------------------------------------------
    def steps(self, screen: Screen, g: AppGraph, here: UIScreen | None, p: Progress) -> list[Step]:
        self.forms._title = screen.title if screen.kind != "screen" else ""
        p.here = here.id if here is not None else None
        live = None
        if here is not None:          # the objects this screen's rows show (the alarm, the contact)
            rows = [e for e in screen.elements if e.row]
            live = (here.id, {i for i in p.unused() + sorted(p.used)
                              if any(self.objects.hit(e, [i], screen)[0] >= 0.8 for e in rows)},
                    {element_key(e): e.label for e in screen.elements if not e.row})
            # a value shown by a row names that row's object ("the alarm labelled 'meeting'"): it
            # is chosen, not typed
            p.ident |= {i for i in live[1] if not p.reached and i not in p.used
                        and self.task.slots[i].kind != "day"}     # (every alarm's card shows every day)
            p.ident |= {i for i in self.finder.known_names() | self.naming if i not in p.used}
            self.finder.ident = p.ident
        if self.finder.recall is not None:
            self.finder.recall.done = {g.id for g in p.reached}
        again = self.again(p)
        done = p.done_ids() - again
        p.moved_on = {i for gid in again for i in p.reached_on[gid]}
        goals = self.finder.goals(p.unused(), exclude=done, limit=30, live=live)
        if here is not None:          # the tab already selected here is no goal: tapping it does nothing
            selected = {element_key(e) for e in screen.elements if e.selected and not e.row}
            goals = [x for x in goals if not (x.screen == here.id and x.key in selected)]
        if here is not None:          # nearer goals first: what is on this screen beats a like one elsewhere
            dist = {k: len(v) for k, v in g.paths_from(here.id, avoid=p.failed_edges).items()}
            for goal in goals:
                d = dist.get(goal.screen) if goal.screen in g.screens else None
                goal.score += NEAR.get(d, -0.1 if d is not None else -0.3) if goal.key else 0.0
            goals.sort(key=lambda x: -x.score)
        redo = next((x for x in p.reached if x.id in again), None)
        if redo is not None:          # (its slots were used the first time: they find it no more)
            goals = [redo] + [x for x in goals if x.id != redo.id]
        cur = p.goal
        if cur is not None and here is not None and cur.kind == "commit" and cur.screen == here.id and \
                cur.id not in p.done_ids() and all(x.id != cur.id for x in goals) and \
                any(element_key(e) == cur.key for e in screen.elements):
            goals.insert(0, cur)      # the confirmation a goal opened (a picker's Save): it finishes it
        goal = self._pick(goals, p, done)
        self._said_choice = next((x for x in goals[:4] if x.kind in ("choice", "pick") and here is not None
                                  and x.screen != here.id and typed_as(x.label, self.task.text)
                                  and all(r.label != x.label for r in p.reached)
                                  # (not one the form shows chosen already: a "mobile number" is Mobile)
                                  and all(e.label != x.label for e in screen.elements)), None)
        if self._said_choice is not None and goal is not None and goal.kind == "commit" and here is not None \
                and goal.screen == here.id:
            goal = p.goal = self._said_choice     # (made before the form it belongs to is saved)
        out: list[Step] = []
        if goal is not None:
            out += self._toward(goal, screen, g, here, p)
        for other in goals[:4]:
            if goal is not None and goal is self._said_choice and other.kind == "commit" and here is not None \
                    and other.screen == here.id:
                continue             # (the form it belongs to is saved after it)
            if goal is None or other.id != goal.id:
                for s in self._toward(other, screen, g, here, p)[:1]:
                    s.score -= 0.3
                    out.append(s)
        out += self._local(screen, here, p)
        for other in goals[4:12] if not out or all(s.score < 0.3 for s in out) else ():
            # (the best goals have no way from here — a conversation with a number no list
            # shows: the goals after them, as the New conversation's recipient box)
            for s in self._toward(other, screen, g, here, p)[:1]:
                s.score -= 0.3
                out.append(s)
            if out and any(s.score >= 0.3 for s in out):
                break
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

    def _pick(self, goals: list[Goal], p: Progress, done: set[tuple]) -> Goal | None:
        if not goals:
            return None
        best = goals[0]
        cur = p.goal
        if cur is not None and cur.id not in done:
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
        if here is not None and (goal.screen == here.id or self._same_page(goal, screen, g, here) or (
                goal.key and ":" not in goal.key and goal.kind in ("button", "commit")    # (an id's)
                and any(element_key(e) == goal.key and e.label == goal.label and not e.row
                        for e in screen.elements))):
            # (or its very button is here: "Add contacts" shows on the selection it waited for)
            return self._at_goal(goal, screen, g, here, p)
        if here is None:
            return []
        route = self.routes.route(g, here, goal, p, screen)
        if route is None:
            return []
        edge = route[0]
        # of ways into the same screen, the one the task's words name ("Default alarm sound",
        # not "Phone ringtone": one sound picker, two meanings)
        alts = [e for e in g.edges_of(edge.src) if e.dst == edge.dst and e.action == edge.action
                and e.id not in p.failed_edges and e.label and not g.is_row(e)] if not g.is_row(edge) else []
        named = max(alts, key=lambda e: self.rel.lexical(e.label), default=edge)
        if self.rel.lexical(named.label) > self.rel.lexical(edge.label) + 0.1:
            edge = named
        if edge.src == here.id and edge.dst != here.id:
            # (or a sibling on screen never tried, that says the task's words where the known way
            # does not: the picker behind "Default alarm sound" is the one behind "Phone ringtone")
            cls = edge.key.split(":", 1)[0]
            sibling = max((e for e in screen.elements if e.clickable and not e.editable and not e.row
                           and element_key(e).split(":", 1)[0] == cls and element_key(e) != edge.key
                           and g.edge(here.id, element_key(e), "tap", e.label) is None),
                          key=lambda e: self.rel.lexical(e.label), default=None)
            if sibling is not None and self.rel.lexical(sibling.label) > self.rel.lexical(edge.label) + 0.2:
                return [Step("tap", sibling, goal=goal, expect=edge.dst, score=goal.score + 0.45,
                             why=f"tap {sibling.label!r} (like {edge.label!r}, in the task's words)")]
        step = self.routes.follow(edge, screen, g, here, p)
        if step is None and edge.id in p.failed_edges:       # that list did not have it: replan once
            route = self.routes.route(g, here, goal, p, screen)
            step = self.routes.follow(route[0], screen, g, here, p) if route else None
        if step is not None:
            step.goal = goal
            step.score = goal.score + 0.5 - 0.02 * len(route)
            if step.element is not None and other_action(self.rel, step.element.label):
                step.score -= 0.5     # "Create label" is no way to rename one: its field is another's
            step.why = f"{step.why} (on the way to {goal.label or 'the goal'})"
        return [step] if step is not None else []

    def _beside(self, screen: Screen, p: Progress) -> Element | None:
        """The button right of a box holding what this episode typed, on its line (Send, or
        Schedule message once a time is chosen): what takes the text — when the task's words
        say it (it sends, it schedules)."""
        typed = [t for t in p.typed.values() if t]
        for box in (e for e in screen.elements if e.editable and any(t in e.label for t in typed)):
            top, bottom = box.bounds[1], box.bounds[3]
            for e in screen.elements:
                if e.clickable and not e.editable and e.bounds[0] >= box.bounds[2] - 5 \
                        and e.bounds[1] < bottom and e.bounds[3] > top \
                        and (self.rel.verb_hit(e.label) or self.rel.lexical(e.label)):
                    return e
        return None

    def _same_page(self, goal: Goal, screen: Screen, g: AppGraph, here: UIScreen) -> bool:
        """Another known screen that shows the goal's element on a page of the same title (a
        Settings page with its switch off shows fewer rows: two screens in the graph)."""
        other = g.screens.get(goal.screen)
        return other is not None and bool(goal.key) and bool(screen.title) and other.title == screen.title and \
            other.kind == screen.kind and any(element_key(e) == goal.key for e in screen.elements)

    # -- on the goal's screen ----------------------------------------------------------------------
    def _at_goal(self, goal: Goal, screen: Screen, g: AppGraph, here: UIScreen, p: Progress) -> list[Step]:
        base = goal.score + 1.0
        fill = self.forms.fill(screen, p)
        if fill:
            for s in fill:
                s.score, s.goal = base + 0.3, goal
                # typing into the goal's own field acts on the goal (a search box: nothing to confirm)
                s.finishes = goal.kind == "field" and s.element is not None and element_key(s.element) == goal.key
            return fill
        entry = self.forms.entry(screen, p)
        if entry is not None:
            entry.score, entry.goal = base + 0.3, goal
            return [entry]
        if goal.kind == "navigate":
            return [Step("done", goal=goal, why=f"{goal.label} is open", score=base, finishes=True)]
        els = [e for e in screen.elements if element_key(e) == goal.key]
        if not els or SELECTING.search(screen.title or ""):
            # (in a selection, the task's object is checked before the selection's button)
            names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone")]
            for e in screen.elements if names else ():
                if (e.clickable or e.checkable) and not e.editable and not e.checked:
                    hit, which = self.objects.hit(e, names, screen)
                    if hit >= 0.8:   # the object first: the goal's button may show once it is
                        return [Step("tap", e, slot=self.task.slots.index(which), goal=goal, score=base,
                                     why=f"choose {e.label!r} first")]   # chosen (a selection's Add)
        if els and SELECTING.search(screen.title or "") and not p.selecting and \
                not any(e.checked for e in screen.elements if e.checkable):
            # nothing the task names is checked yet: the selection's button would act on nothing
            if screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
                return [Step("swipe", text="up", why="scroll to find it", score=base - 0.2, goal=goal)]
            return []
        if not els:
            want = here.elements.get(goal.key)
            if want is not None and screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
                return [Step("swipe", text="up", why=f"scroll to {goal.label}", score=base - 0.2, goal=goal)]
            return []
        named = [e for e in els if e.label == goal.label or e.desc == goal.label]
        if goal.kind == "slider":           # the volume the task names, among like sliders
            step = stepper.toward(screen, els, goal.label, self.task, self.rel, p.stepped)
            if step is not None:            # a value the task names, between step buttons
                step.goal, step.score = goal, base
                return [step]
            el = named[0] if named else (els[0] if len(els) == 1 else None)
            if el is None:
                return []
            end = extreme(self.task.text) or ("min" if comparative(self.task.text) < 0 else "max")
            return [Step("slide", el, end, goal=goal, score=base, finishes=True,
                         why=f"slide {el.label!r} to its {end}")]
        if len(els) > 1 and named and len(set(x.label for x in els)) > 1 and (goal.kind == "choice" or not any(
                e.row and here.elements.get(goal.key, None) is not None and here.elements[goal.key].varies
                for e in els)):
            # the option the task names; a choice's options share one id and vary by label (a
            # dialog's radio rows), unlike rows of objects, whose explored labels mean nothing
            el = named[0]
        else:
            el = self.objects.row(els, p, screen) if len(els) > 1 or els[0].row else els[0]
        if el is None:
            return self.objects.find_row(screen, here, goal, p, base)
        if goal.kind in ("switch", "choice") and goal.want is not None and el.checked == goal.want:
            hit, which = self.objects.hit(el, p.unused(), screen)
            if which is not None and hit >= 0.8 and any(
                    i != self.task.slots.index(which) for i in p.values_left()):
                # one of several (Monday of "every weekday") already set: so may others be;
                # those that are not are next
                for e in els:
                    h, w = self.objects.hit(e, p.unused(), screen)
                    if w is not None and h >= 0.8 and e.checked == goal.want:
                        p.used.add(self.task.slots.index(w))
                p.reached.append(goal)
                p.goal = None
                return []
            return [Step("done", goal=goal, why=f"{el.label} is already {'on' if el.checked else 'off'}",
                         score=base, finishes=True)]
        if goal.kind == "choice" and el.checked:
            confirm = next((e for e in screen.elements if e.rid == "button1"), None)
            if confirm is not None and screen.kind in ("dialog", "sheet") and self.rel.lexical(el.label) < 0.3:
                # an option the task does not name, already chosen in a dialog the task goes
                # through (the account an export reads): the dialog's own confirmation is the step
                return [Step("tap", confirm, goal=Goal(goal.screen, element_key(confirm), "tap", "commit",
                                                       confirm.label, goal.score, covers=goal.covers),
                             why=f"{el.label} is chosen: {confirm.label}", score=base, finishes=True)]
            return [Step("done", goal=goal, why=f"{el.label} is chosen", score=base, finishes=True)]
        if goal.kind == "relabel" and not self.rel.verb_hit(el.label) and self.rel.verb_hit(goal.label, *[
                x for e2 in [g.edge(here.id, goal.key, "tap")] if e2 is not None for x in e2.detail.get("labels", [])]):
            # a Start/Pause button already past what the task asks (it shows Pause: it started)
            return [Step("done", goal=goal, why=f"{el.label!r} shows it is done", score=base, finishes=True)]
        if goal.kind == "field":
            slot = self.forms.slot_for_field(el, p) if not p.typed.get(field_id(el)) else None
            if slot is None:          # (what this episode typed there stays: a second slot is another's)
                return []
            return [Step("type", el, self.task.slots[slot].text, slot, goal=goal, score=base, finishes=True,
                         why=f'type "{self.task.slots[slot].text}" in {el.label}')]
        known = here.elements.get(goal.key)
        if known is not None and not known.varies and el.label != goal.label and len(set(known.labels)) == 2 \
                and {el.label, goal.label} == set(known.labels) and goal.kind in ("commit", "button"):
            # a two-state button showing its other state ("Add to favorites" where the goal is
            # "Remove from favorites"): this object is not in the state the goal acts on
            p.failed_goals.add(goal.id)
            return []
        edge = g.edge(here.id, goal.key, goal.action, el.label)
        hit, which = self.objects.hit(el, p.unused(), screen)
        slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
        return [Step(goal.action if goal.action != "type" else "tap", el, slot=slot, edge=edge, goal=goal,
                     expect=edge.dst if edge is not None and edge.effect in NEW_SCREEN else None,
                     why=f"{goal.action} {el.label!r} " + effect_line(g, edge), score=base, finishes=True)]

    # -- the screen in front --------------------------------------------------------------------------
    def _local(self, screen: Screen, here: UIScreen | None, p: Progress) -> list[Step]:
        """Elements here that show an unused slot or the task's words, scored as goals would be
        (what the graph does not know: a Send button that appears once a message is typed)."""
        out = []
        sid = here.id if here is not None else -1
        for e in screen.elements:
            if NEGATIVE.match(e.label.strip()) or e.password:
                continue
            key = (sid, element_key(e), e.label, "tap")
            if p.acted[key]:
                continue
            if e.row:
                continue                  # a list row is chosen for the object it shows, on a route
            hit, which = self.objects.hit(e, p.unused())
            if not hit and any(slot_match(self.task.slots[i], e.label) >= 0.8 for i in p.used | p.ident):
                continue                  # the object's own label ("meeting" on its alarm): chosen already
            lex = self.rel.lexical(e.label, e.desc)
            score = 1.0 * hit + 1.0 * lex
            if score < 0.45:
                continue
            if e.editable:
                continue                  # fields are filled by _fill
            slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
            out.append(Step("long_press" if (e.long_clickable and not e.clickable) else "tap", e, slot=slot,
                            why=f"tap {e.label!r} (it says what the task says)", score=score))
        fill = self.forms.fill(screen, p)
        for s in fill:      # a search opened to find the task's object is typed into at once
            searching = s.slot is not None and is_search(s.element) and self.task.slots[s.slot].kind in ("name", "phone")
            # (before any way elsewhere, however good the goal it leads to)
            s.score = max(3.0, p.goal.score + 0.6 if p.goal is not None else 0.0) if searching else 1.2
        out += self.objects.select(screen, here, p)
        out += self.objects.swipe_away(screen, here, p)
        entry = self.forms.entry(screen, p)
        if entry is not None:                    # a dial or keypad here takes a time or duration
            entry.score = 2.5
            out.append(entry)
        if p.pending:                            # values entered here wait for their OK/Start
            confirm = next((e for e in screen.elements if e.rid == "button1" or POSITIVE.match(e.label.strip())),
                           None)
            score = 2.0
            if confirm is None:      # a suggestion the typed value brought up ("Send to 303-555-0101")
                confirm = next((e for e in screen.elements if e.clickable and not e.editable and e.label and any(
                    slot_match(self.task.slots[i], e.label) >= 0.8 for i in p.pending
                    if self.task.slots[i].kind in ("phone", "email"))), None)
                score = 2.6          # what the typing was for: before any way elsewhere
            if confirm is None and not p.values_left() \
                    and not any(self.task.slots[i].kind not in ("text", "date", "time") for i in p.pending):
                confirm = self._beside(screen, p)   # the button at the end of the message box
                score = 2.2
            if self._said_choice is not None:   # a choice the task says is still to make on the way
                score = 0.8          # ("a work number": the number's type, Mobile, set to Work before Save)
            if confirm is not None and here is not None:
                goal = Goal(here.id, element_key(confirm), "tap", "commit", confirm.label, score)
                out.append(Step("tap", confirm, goal=goal, finishes=True, score=score,
                                why=f"tap {confirm.label!r} to confirm what was entered"))
        return out + fill

