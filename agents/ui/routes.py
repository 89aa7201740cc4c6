"""Ways to a goal's screen: the shortest known way from the screen in front, through the list
row of the object the task names when the way passes a list of such rows (the contact, the
alarm, the conversation; scrolled to when below the fold), and which element on screen takes
each step of it — the named one among like buttons, a category whose page lists the object, a
card already open below the fold."""
from __future__ import annotations

from .goals import Goal, GoalFinder, listed_like, onward, shaped
from .graph import NEW_SCREEN, AppGraph, UIEdge, UIScreen, element_key
from .objects import MAX_ROW_SCROLLS, Objects
from .progress import Progress
from .relevance import Relevance, words_of
from .screen import Screen
from .step import Step, effect_line

OPPOSITE = {"expand": "collapse", "show": "hide", "more": "less", "open": "close"}


class Routes:
    def __init__(self, task, relevance: Relevance, finder: GoalFinder, objects: Objects):
        self.task, self.rel, self.finder, self.objects = task, relevance, finder, objects

    def route(self, g: AppGraph, here: UIScreen, goal: Goal, p: Progress,
              screen: Screen | None = None) -> list[UIEdge] | None:
        """The way from here to the goal's screen; through the row of an object the task names
        when the way passes a list of such rows."""
        paths = g.paths_from(here.id, avoid=p.failed_edges)
        direct = g.paths_from(here.id, avoid=p.failed_edges, rows=False).get(goal.screen)
        new = self.finder.made          # a new object: its name is typed, not looked for
        if direct is None and (new or not any(s.kind in ("name", "phone") for s in self.task.slots)):
            # through any row of a list only when the task names no one: a task about Priya is
            # never carried out in another person's conversation
            direct = paths.get(goal.screen)
        if screen is not None and (direct is None or len(direct) > 1):
            # a control straight to the goal that exploration saw as one button, not a row, and is
            # here once — though its label showed objects' data since (an alarm card's "Add label"
            # read 'Standup call'), which made it count as a list's row: it is no choice to make
            one = [e for e in g.edges_of(here.id) if e.dst == goal.screen and e.effect in NEW_SCREEN
                   and e.id not in p.failed_edges and g.is_row(e) and not getattr(here.elements.get(e.key), "row", True)
                   and sum(element_key(x) == e.key for x in screen.elements) == 1] if here.id in g.screens else []
            direct = [one[0]] if one else direct
        best = direct
        # (the object a slot names is still chosen on the way after the slot was used: its row
        # tapped once, the way to the goal still goes through it)
        names = [i for i in sorted(set(p.unused()) | p.ident) if self.task.slots[i].kind in ("name", "phone", "time", "text")
                 # (a quoted value to enter is looked for only once a list shows it: an alarm an
                 # earlier episode labelled 'meeting' left the word among the list's labels)
                 and (self.task.slots[i].kind != "text" or i in p.ident)]
        names = [i for i in names if i not in new]
        if goal.kind in ("field", "commit"):    # what the goal's field takes is typed there, not
            takes = self.takes(g, goal)        # looked for on the way — unless a list shows it
            # (a list on screen, or one exploration saw it in: "Work" is a label, "Colleagues" not)
            shown = p.ident | {i for slots, _, _ in self.finder._row_slots(g) for i in slots}
            typed = [i for i in takes if i not in shown and i in p.unused()]   # and the field
            names = [i for i in names if i not in takes or (i in shown and typed)]  # has another
            # to take ("rename the Work label to Colleagues"; "block 650-555-0199" types it)
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
            if screen is not None and e.src == here.id:   # (and what its rows show now: the alarm
                labels += [x.label for x in screen.elements if x.row]   # labelled 'meeting' since)

            # (or the page it opens lists it: the Classic sounds hold Draco)
            inside = [lab for x in g.screens[e.dst].elements.values() for lab in x.labels] \
                if e.dst in g.screens and e.dst != e.src else []
            # (or its rows are the kind of thing the slot names, added since exploring: a contact,
            # or an alarm the task names by its time — its card's time, not its arrow, varies)
            cards = [x for x in src.elements.values() if x.row and x.varies]
            shows = {i for i in names if any(self.rel.slot_hits(lab, [self.task.slots[i]])[0] >= 0.5 for lab in labels)
                     or el.varies and i not in self.objects.values()
                     and any(shaped(lab, self.task.slots[i]) for lab in el.labels)
                     or i in p.ident and any(listed_like(x.labels, self.task.slots[i]) for x in cards)
                     or any(self.rel.slot_hits(lab, [self.task.slots[i]])[0] >= 0.8 for lab in inside)}
            if not shows:
                continue
            after = onward(g, e.dst)
            if goal.screen not in after:
                continue              # the row's page does not lead on to the goal
            if e.src != here.id and p.object is not None and here.id in after \
                    and p.object not in p.reached_on.get(goal.id, ()):
                continue              # on the page of the object chosen, not yet done for it:
                                      # done here first ("Add Ben and Emily to Work", on Ben's page)
            rest = g.paths_from(e.dst, avoid=p.failed_edges).get(goal.screen)
            if rest is None:
                continue
            ways.append((len(paths[e.src]) + 1 + len(rest), len(rest), paths[e.src] + [e] + rest, shows))
        if ways:                       # the object the task names is chosen on the way
            way = min(ways, key=lambda w: (w[0], w[1]))
            # (still to choose: an object that way's row shows — not another the task names, as
            # the label Family to pick for a contact chosen already, one tap from its page)
            fresh = any(i in p.unused() for i in way[3])
            # (an object chosen already: its row again only when no longer than the direct way —
            # from its expanded card the Label is one tap, not a collapse and an expand away)
            near = best if best is not None else paths.get(goal.screen)
            if fresh or near is None or way[0] <= len(near):
                best = way[2]
            else:
                best = near
        return best

    def takes(self, g: AppGraph, goal: Goal) -> set[int]:
        """The slots a field goal's field suits (a phone number for "Phone number")."""
        from .fields import field_fit

        screen = g.screens.get(goal.screen)
        el = screen.elements.get(goal.key) if screen is not None else None
        if el is None:
            return set()
        # (a form's or a dialog's confirmation: what its fields take)
        fields = [el] if goal.kind == "field" else [x for x in screen.elements.values()
                                                     if x.kind in ("field", "password")]
        return {i for i, s in enumerate(self.task.slots) for f in fields
                if field_fit(" ".join([f.label, f.detail, f.key.replace("_", " ")]).lower(), s, self.task.text,
                             f.kind == "password") >= 0.5}

    def follow(self, edge: UIEdge, screen: Screen, g: AppGraph, here: UIScreen, p: Progress) -> Step | None:
        peer = self.peer(edge, screen, g, p)
        if peer is not None:
            return peer
        els = [e for e in screen.elements if element_key(e) == edge.key]
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "text", "phone")]
        # (categories only: in a list of people, the one the task names is looked for, not guessed)
        people = any(listed_like([e.label for e in els], self.task.slots[i]) for i in names)
        several = len(els) > 1 or len(els) == 1 and els[0].label == edge.label   # (or the one row keyed by its label)
        for e in els if several and names and not people and self.objects.row(els, p, screen) is None else ():
            # the row whose page lists what the task names (the Classic sounds hold Draco; the
            # Default alarm sound's picker holds Argo Navis — not a row showing it, looked for below)
            known = g.edge(here.id, edge.key, edge.action, e.label)
            page = g.screens.get(known.dst) if known is not None and known.dst != here.id else None
            if page is not None and any(
                    self.rel.slot_hits(lab, [self.task.slots[i]])[0] >= 0.8
                    for x in page.elements.values() for lab in x.labels for i in names):
                return Step(edge.action, e, edge=known, expect=known.dst,
                            why=f"{edge.action} {e.label!r} " + effect_line(g, known))
        el = self.objects.row(els, p, screen) if els and (len(els) > 1 or els[0].row) else (els[0] if els else None)
        if el is None:
            found = self.objects.find_row(screen, here, None, p, 1.0)
            if not found and g.is_row(edge):
                p.failed_edges.add(edge.id)     # the object is not in this list: another way to it
            return found[0] if found else None
        if opened(edge.label, el.label) and screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
            # it shows "Collapse alarm" where the way says "Expand alarm": what it opens is open
            # already, below the fold (an alarm's card expanded at the bottom of the list)
            return Step("swipe", text="up", why=f"{el.label!r}: it is open, below")
        slot = None
        if len(els) > 1 or not here.elements.get(edge.key, None) or len(here.elements[edge.key].labels) > 1:
            hit, which = self.objects.hit(el, p.unused(), screen)
            slot = self.task.slots.index(which) if which is not None and hit >= 0.5 else None
            if slot is None:
                slot = next((i for i in p.unused() if self.task.slots[i].kind == "ordinal"), None)
        return Step(edge.action, el, slot=slot, edge=edge, expect=edge.dst,
                    why=f"{edge.action} {el.label!r} " + effect_line(g, edge))

    def peer(self, edge: UIEdge, screen: Screen, g: AppGraph, p: Progress) -> Step | None:
        """Like objects as separate buttons that all open the same screen (the devices to pair,
        each opening "Pair with …?"): the one the task names, not the one the route was learned
        through (a task to pair the Galaxy Buds2 paired the JBL Flip 5 the route went by)."""
        if edge.dst is None or edge.effect not in NEW_SCREEN:
            return None
        keys = {e.key for e in g.edges_of(edge.src) if e.dst == edge.dst and e.action == edge.action}
        names = [i for i in p.unused() if self.task.slots[i].kind in ("name", "phone", "text")]
        if len(keys) < 3 or not names:
            return None
        cls = edge.key.split(":", 1)[0]
        said = words_of(" ".join(self.task.words))
        for e in screen.elements:      # one the task calls by its name ("the default alarm sound"):
            if element_key(e) in keys and words_of(e.label) and words_of(e.label) <= said:   # it
                known = g.edge(edge.src, element_key(e), edge.action, e.label)   # is the way in
                return Step(edge.action, e, edge=known or edge, expect=edge.dst,
                            why=f"{edge.action} {e.label!r} " + effect_line(g, known or edge))
        best, hit_best = None, 0.0
        for e in screen.elements:
            k = element_key(e)
            if e.editable or not (e.clickable or e.long_clickable) or not (k in keys or k.split(":", 1)[0] == cls):
                continue
            hit, which = self.objects.hit(e, names, screen)
            if hit > hit_best:
                best, hit_best, slot = e, hit, self.task.slots.index(which)
        if best is None or hit_best < 0.8:
            here = g.screens[edge.src]
            if screen.scrollable and p.scrolls[here.id] < MAX_ROW_SCROLLS:
                return Step("swipe", text="up", why="scroll to the one the task names")
            return None
        known = g.edge(edge.src, element_key(best), edge.action, best.label)
        return Step(edge.action, best, slot=slot, edge=known or edge, expect=edge.dst,
                    why=f"{edge.action} {best.label!r} " + effect_line(g, known or edge))


def opened(way: str, now: str) -> bool:
    """Whether ``now`` is ``way``'s other state ("Collapse alarm" for "Expand alarm")."""
    a, b = way.lower().split(" ", 1) if " " in way else (way.lower(), ""), \
        now.lower().split(" ", 1) if " " in now else (now.lower(), "")
    return OPPOSITE.get(a[0]) == b[0] and a[1] == b[1]
