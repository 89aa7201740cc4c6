"""After each step: where the phone is now, whether the step did what its edge predicted, and
what the episode learned (slots used up, goals reached, edges that failed, new screens and
edges — an episode adds to the app's graph as exploration does, without its scrolling)."""
from __future__ import annotations

from .device import LAUNCHERS
from .exploring import POSITIVE
from .forms import field_id, is_search
from .goals import Goal
from .graph import NEW_SCREEN, AppGraph, UIEdge, UIScreen, element_key
from .knowledge import Knowledge
from .planner import Step
from .routes import opened
from .step import SELECTING
from .progress import Progress
from .relevance import stem, word_match, words_of
from .screen import Screen
from .slots import slot_match


def locate(knowledge: Knowledge, screen: Screen, apps: dict[str, str], opener: str = "",
           data: frozenset[str] = frozenset()) -> tuple[AppGraph | None, UIScreen | None]:
    """The graph and known screen of what is in front (a new screen is added to the graph);
    (None, None) on the home screen. ``data``: the episode's values (``Progress.data``)."""
    package = screen.package
    if not package or package in LAUNCHERS:
        return None, None
    g = _graph_for(knowledge, package, apps)
    if g is None:                 # an app left to (Chrome from a browser setting): not learned
        return None, None
    here, _ = g.match(screen)
    if here is None:
        here = knowledge.save_screen(g, UIScreen.of(screen, opener))
        if g.home is None:
            g.home = here.id
            knowledge.save_app(g)
    else:
        knowledge.observe(g, here, screen, rows=False, data=data)  # (a list's rows now are this episode's data)
    return g, here


def _graph_for(knowledge: Knowledge, package: str, apps: dict[str, str]) -> AppGraph | None:
    """An app's own graph, or the graph of the app that opens this package's screens (a picker
    without an icon of its own lives in the graph of the app that explored it, or in one of its
    own). None for an app with an icon that nobody explored while others were: screens an episode
    passes through there would become an app of a few screens that later tasks are planned into."""
    if knowledge.known(package):
        return knowledge.graph(package)
    for root in apps.values():
        g = knowledge.graph(root)
        if any(s.package == package for s in g.screens.values()):
            return g
    if package in apps.values() and any(knowledge.known(p) for p in apps.values()):
        return None
    return knowledge.graph(package)           # nothing explored: learn as it goes


def learn_step(knowledge: Knowledge, p: Progress, step: Step, before: Screen, g: AppGraph | None,
               here: UIScreen | None, after: Screen, apps: dict[str, str], verify: bool = True) -> None:
    opener = step.element.label if step.element is not None else ""
    g2, there = locate(knowledge, after, apps, opener, p.data())
    changed = _signature(before) != _signature(after)
    key = element_key(step.element) if step.element is not None else ""
    if here is not None:
        p.acted[(here.id, key, step.element.label if step.element else step.text, step.action)] += 1
    p.stalls = 0 if changed or step.action == "type" else p.stalls + 1
    if step.action == "swipe" and here is not None:
        p.scrolls[here.id] += 1
    if step.action == "type":
        p.typed[field_id(step.element)] = step.text
    searching = step.action == "type" and is_search(step.element)
    if step.slot is not None and (changed or step.action == "type") and not searching:
        # a name typed into a search is not used up: the row it finds is, and when it finds
        # nothing the name is still there to look for elsewhere (a new conversation's contacts)
        p.used.add(step.slot)
        if step.action == "type":
            p.wait(step.slot)                 # what is typed waits for its OK
        elif step.element is not None and step.element.row and p.task.slots[step.slot].kind in ("name", "phone"):
            p.object = step.slot              # what is done next is done to this one
    if g is not None and here is not None and step.element is not None and step.action in ("tap", "long_press"):
        _learn_edge(knowledge, p, g, here, step, key, before, after, there if g2 is g else None, verify)
    if step.action == "tap" and changed and not step.finishes and SELECTING.search(before.title or "") \
            and step.element is not None and (step.element.checkable or step.element.row):
        p.selecting = True                    # an item checked: the selection's button is still to press
    if step.action == "tap" and here is not None and (there is None or there.id != here.id) \
            and step.element is not None and (step.element.rid == "button1" or POSITIVE.match(step.element.label.strip())):
        p.confirmed(here.id)                  # left by its OK: what was entered there is taken
    if step.finishes and step.goal is not None:
        _goal(p, step, step.goal, before, after, here, there, changed)


def _learn_edge(knowledge: Knowledge, p: Progress, g: AppGraph, here: UIScreen, step: Step, key: str,
                before: Screen, after: Screen, there: UIScreen | None, verify: bool) -> None:
    edge = step.edge or g.edge(here.id, key, step.action, step.element.label)
    moved = there is not None and there.id != here.id
    if edge is not None and edge.effect == "commit":
        # a commit stays one: its meaning is what it does to the phone, not the screen it leaves
        # in front (a Delete that then shows the list is no way to the list, and learned as one
        # it was no goal for the next task that deletes)
        edge.ok += 1
        knowledge.save_edge(g, edge)
        return
    if edge is None or edge.effect == "untried":
        # what was not known (or not tried when exploring) is learned from what it did
        if edge is None:
            edge = UIEdge(0, here.id, key, step.action, "none", label=step.element.label)
        sensitive = edge.sensitive
        if moved:
            edge.effect, edge.dst = there.kind, there.id
        elif after.package != before.package:
            edge.effect, edge.dst = "external", None
        else:
            edge.effect, edge.dst = ("content" if _signature(before) != _signature(after) else "none"), None
        edge.sensitive = sensitive
        edge.ok += 1
        knowledge.save_edge(g, edge)
        return
    if not verify:
        return
    if edge.effect in NEW_SCREEN:
        twin = next((e for e in after.elements if e.rid == step.element.rid and e.bounds == step.element.bounds), None)
        # (or it opened in place, below the fold: "Expand alarm" now says "Collapse alarm")
        ok = there is not None and there.id == edge.dst or twin is not None and opened(step.element.label, twin.label)
    elif edge.effect in ("toggle", "relabel", "content"):
        ok = _signature(before) != _signature(after) and (there is None or there.id == here.id)
    else:
        ok = True
    if ok:
        edge.ok += 1
    else:
        edge.failed += 1
        p.failed_edges.add(edge.id)
    knowledge.save_edge(g, edge)


def _goal(p: Progress, step: Step, goal: Goal, before: Screen, after: Screen, here: UIScreen | None,
          there: UIScreen | None, changed: bool) -> None:
    """Whether acting on the goal reached it; a confirmation it opened becomes the goal."""
    form = there is not None and there.kind == "screen" and any(e.editable for e in after.elements)
    if there is not None and here is not None and there.id != here.id and (there.kind in ("dialog", "sheet") or form):
        # a confirmation it opened (or a form to save, as an export's file picker) is the goal now
        confirm = next((e for e in after.elements if e.rid == "button1" or POSITIVE.match(e.label.strip().lower())
                        or (not form and _same_word(e.label, goal.label))), None)
        if confirm is not None and goal.kind in ("commit", "button", "switch", "relabel", "content"):
            p.goal = Goal(there.id, element_key(confirm), "tap", "commit", confirm.label, goal.score,
                          covers=goal.covers)
            return
    if goal.kind == "field" and step.action == "type":
        # a form or a dialog is done when confirmed: its OK/Save becomes the goal
        confirm = next((e for e in after.elements if e.rid == "button1" or POSITIVE.match(e.label.strip().lower())),
                       None)
        if confirm is not None and there is not None:
            p.goal = Goal(there.id, element_key(confirm), "tap", "commit", confirm.label, goal.score,
                          covers=goal.covers)
            return
    # a slider's position is not in the dump (a real SeekBar shows none): its drag is taken as done
    reached = changed or step.action in ("type", "slide")
    if goal.kind == "switch" and goal.want is not None and step.element is not None:
        twin = next((e for e in after.elements if e.bounds == step.element.bounds and e.rid == step.element.rid), None)
        reached = twin is None or twin.checked == goal.want or there is None or there.id != (here.id if here else None)
    if reached and goal.kind in ("switch", "choice") and SELECTING.search(before.title or ""):
        # an item checked in a list in selection mode ("Select languages to remove") is not yet
        # acted on: the selection's own button that says the task's verb is the goal now
        act = next((e for e in after.elements if e.clickable and not e.row and not e.checkable
                    and any(word_match(stem(w), words_of(e.label)) for w in p.task.words)), None)
        if act is not None and there is not None:
            p.used |= {step.slot} if step.slot is not None else set()
            p.selecting = True
            p.goal = Goal(there.id, element_key(act), "tap", "commit", act.label, goal.score, covers=goal.covers)
            return
    if reached:
        if goal.kind in ("commit", "button"):
            p.selecting = False
        if before.kind in ("dialog", "sheet"):
            # a confirmation that names the object ("Unblock +1 800-555-0175?") says the object
            # the task named is the one acted on: its slot is used, not a value still to enter
            shown = [before.title, *before.texts[:4]]
            p.used |= {i for i in p.unused() if any(slot_match(p.task.slots[i], t) >= 0.8 for t in shown if t)}
        p.reached.append(goal)
        if p.object is not None:
            p.reached_on.setdefault(goal.id, set()).add(p.object)
        p.goal = None
        if SELECTING.search(after.title or "") and not SELECTING.search(before.title or ""):
            p.selecting = True      # it opened a selection ("Select languages to remove"): not done yet
        left = there is None or here is None or there.id != here.id
        # what confirms values entered for it (a button never tried when exploring, as a Block
        # that is disabled until a number is typed, confirms them by closing their dialog)
        # (or that took the values in: a Send on the same screen empties the message box)
        # (not a choice made in a dialog that returns to the form still holding them: the
        # number's type set to Work, the form's Save still to tap)
        if goal.kind == "commit" or goal.kind in ("pick", "choice") and not _held(p, after) \
                or goal.kind == "button" and (left or _taken(p, before, after)):
            p.confirmed(here.id if here is not None else None)


def _held(p: Progress, screen: Screen) -> bool:
    """Whether fields here still hold what this episode typed (a form not yet saved)."""
    typed = [t for t in p.typed.values() if t]
    return any(e.editable and any(t in e.label for t in typed) for e in screen.elements)


def _taken(p: Progress, before: Screen, after: Screen) -> bool:
    """Whether a value this episode typed left its field with the tap (sent, not still waiting)."""
    for e in before.elements:
        text = p.typed.get(field_id(e)) if e.editable else None
        if text and text in e.label:
            twin = next((f for f in after.elements if f.editable and field_id(f) == field_id(e)), None)
            if twin is None or text not in twin.label:
                return True
    return False


def _same_word(a: str, b: str) -> bool:
    aw, bw = set(a.lower().split()), set(b.lower().split())
    return bool(aw & bw)


def _signature(screen: Screen) -> tuple:
    return (screen.package, screen.kind, tuple((e.label, e.checked, e.bounds) for e in screen.elements),
            tuple(screen.texts[:20]))
