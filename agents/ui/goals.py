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
from .relevance import VAGUE, Relevance, stem, synonyms, undo, word_match, words_of
from .safety import SENSITIVE
from .slots import Slot, TaskInfo

VALUE_KINDS = ("text", "email", "phone", "time", "duration", "date", "number", "day")


def is_value(slot) -> bool:
    """A value the task gives to enter (a name it gives with "called" counts), not an object to find."""
    # ("tomorrow" is set where a calendar asks for a date, and is no value left over where none
    # does: an alarm for tomorrow morning)
    return slot.kind in VALUE_KINDS and not (slot.kind == "date" and slot.value is None) or slot.value == "called"
NAVIGATE = re.compile(r"\b(check|view|open|see|look at|go to|show me|display|find)\b", re.I)
VERBS = re.compile(r"\b(delete|remove|send|block|unblock|archive|save|add|create|set|start|stop|"
                   r"pause|resume|reset|cancel|pin|unpin|star|unstar|mute|export|merge|rename|"
                   r"connect|pair|schedule|forward|lap|search|change|edit|sort|turn|enable|disable|"
                   r"install|uninstall|clear|call|reply|mark|select|done|ok|apply|next)\b", re.I)
REMOVE_DAY = re.compile(r"\b(remove|delete|take|drop|skip|not on|no longer|without)\b", re.I)
# the task makes something ("a new email for Kira", "my new number" replace a value: nothing made)
CREATE = re.compile(r"\b(create|new(?! (?:e-?mail|phone|number|mobile|address|nickname|company|job title|ringtone|"
                    r"wallpaper|password|time|date)\b)|make a (?:new )?contact|add a (?:new )?contact)\b", re.I)
CREATING = re.compile(r"\s*(add|create|new)\b", re.I)     # a button that starts making something
STRICT = re.compile(r"\b(reset|erase|wipe|factory|format)\b", re.I)
TERMINAL_EFFECTS = ("toggle", "relabel", "content", "commit", "untried")


def made(task: TaskInfo) -> set[int]:
    """The slots naming what the task makes: its numbers (typed into the new thing) and the first
    name after the words that create ("Put Lucas Martin in a new label called Soccer" makes Soccer;
    Lucas is an existing contact, looked for) — every name when none follows ("Save Ana Ruiz as a
    new contact"). Nothing when the task makes nothing."""
    m = CREATE.search(task.text)
    if m is None:
        return set()
    names = [i for i, s in enumerate(task.slots) if s.kind == "name"]
    after = [i for i in names if task.slots[i].start >= m.start()]
    return {i for i, s in enumerate(task.slots) if s.kind == "phone"} | ({after[0]} if after else set(names))


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
    option: str = ""              # which of the options under one key (the days of an alarm)

    @property
    def id(self) -> tuple:
        return (self.screen, self.key, self.action) + ((self.option,) if self.option else ())


def describe(g: AppGraph, s: UIScreen, el: UIElement, edge: UIEdge | None, label: str = "") -> str:
    """An edge's text for retrieval: where, what, and what it does (templates, no model)."""
    where = " › ".join((g.way_labels(s.id) + [s.title])[-3:]) or "screen"
    what = {"switch": "switch", "choice": "option", "field": "text field", "password": "password field"}.get(el.kind, "button")
    what = "slider" if el.cls == "SeekBar" else what
    text = f"{where}: {label or el.label}" + (f" ({el.detail})" if el.detail else "") + f" [{what}]"
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
        self.plain = plain = "".join(" " if any(x.start <= i < x.end for x in task.slots if x.kind == "text")
                                     else ch for i, ch in enumerate(task.text))     # the task without its quotes
        # the task opens with it ("Show me the notification settings"; not "Set the Display size")
        self.navigating = bool(NAVIGATE.match(plain.strip()))
        # only to look ("Check the battery usage"): no verb that changes anything
        self.looking = self.navigating and not any(VERBS.fullmatch(w) for w in task.words
                                                   if not NAVIGATE.fullmatch(w))
        self._rows: dict[str, list[tuple[set[int], set[int], set[int]]]] = {}   # package -> (slots, shaped, after)
        self._unnamed: dict[str, set[int]] = {}
        self.ident: set[int] = set()        # value slots that name an object listed on screen
        self.qualifiers = qualifiers(task.text)
        self.searching = re.search(r"\b(search|find|look (?:up|for))\b", task.text, re.I) is not None
        self.made = made(task)              # the slots naming what the task makes

    def unnamed(self, g: AppGraph) -> set[int]:
        """Screens reached only by choosing a row of a list in which the task names nothing (a
        message long-pressed in a chat, for "delete my chat with Leila"): acting there acts on
        an object the task did not ask about."""
        if g.package not in self._unnamed:
            avoid, after = set(), set()
            for e in g.edges.values():
                src = g.screens.get(e.src)
                el = src.elements.get(e.key) if src else None
                if el is None or e.dst is None or e.effect not in NEW_SCREEN or not el.varies or len(el.labels) < 2:
                    continue
                if any(s.kind == "ordinal" or any(self.rel.slot_hits(lab, [s])[0] >= 0.8 for lab in el.labels)
                       or listed_like(el.labels, s) or s.kind == "name" and listed_like(el.labels, PERSON)
                       for s in self.task.slots):       # (a first name names someone in a list of people)
                    continue
                avoid.add(e.id)
                after |= onward(g, e.dst)
            reach = set(g.paths_from(g.home, avoid=avoid)) if g.home is not None else set()
            self._unnamed[g.package] = after - reach
        return self._unnamed[g.package]

    def known_names(self) -> set[int]:
        """Quoted values that name something exploration saw ('JBL Flip 5', 'Argo Navis'): an
        object to choose, not a value to type."""
        if not hasattr(self, "_known"):
            # (not a list row's nor one whose label changes: those are data — an episode that typed
            # 'meeting' as a label leaves 'meeting' among its labels, no reason to look for it next time)
            labels = {lab for g in self.graphs for s in g.screens.values() for e in s.elements.values()
                      if not e.row and len(set(e.labels)) == 1 for lab in e.labels}
            self._known = {i for i, s in enumerate(self.task.slots) if s.kind == "text" and len(s.text.split()) <= 4
                           and any(self.rel.slot_hits(lab, [s])[0] >= 0.9 for lab in labels)}
        return self._known

    def _row_slots(self, g: AppGraph) -> list[tuple[set[int], set[int]]]:
        """For each list-row edge: the task's slots its rows show (an ordinal fits any list), and
        the screens reachable after it — a goal among them can use those slots on the way."""
        if g.package not in self._rows:
            out = []
            for e in g.edges.values():
                src = g.screens.get(e.src)
                el = src.elements.get(e.key) if src else None
                if el is None or e.dst is None or e.effect not in NEW_SCREEN or len(el.labels) < 2:
                    continue
                slots = {i for i, s in enumerate(self.task.slots) if s.kind == "ordinal" or
                         any(self.rel.slot_hits(lab, [s])[0] >= 0.8 for lab in el.labels)}
                like = {i for i, s in enumerate(self.task.slots) if i not in slots and el.varies
                        and listed_like(el.labels, s)}
                if slots or like:
                    out.append((slots, like, onward(g, e.dst)))
            self._rows[g.package] = out
        return self._rows[g.package]

    def goals(self, unused: list[int], exclude: set = frozenset(), limit: int = 8,
              live: tuple[int, set[int]] | None = None) -> list[Goal]:
        """The best goals over every known screen, best first. ``live``: (the screen in front,
        the slots its list rows show) — a row's switch or button there acts on that object."""
        self._live = live
        found: list[Goal] = []
        texts: list[str] = []
        for g in self.graphs:
            for s in g.screens.values():
                for el, twin in [(el, el.key) for el in s.elements.values()] + self._kin(g, s):
                    for goal, text in self._of(g, s, el, unused, twin):
                        if goal.id not in exclude:
                            found.append(goal)
                            texts.append(text)
                if self.navigating and s.title and s.kind == "screen" and s.id != g.home:
                    # (the app's first page is no answer: the task would only have named the app)
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

    def _kin(self, g: AppGraph, s: UIScreen) -> list[tuple[UIElement, str]]:
        """Options a dialog did not show while exploring, as (element, the key of a like option
        whose edge it shares): a dialog of buttons each named by its own label ("Add to label":
        Family, Work) whose names are all among another list's ("Labels": Family, Friends,
        Work) offers that list's other names the task says too — exploration opened it for a
        contact already in Friends."""
        if s.kind not in ("dialog", "sheet"):
            return []
        alike: dict[tuple, list[UIElement]] = {}      # (options all leading to the same place)
        for el in s.elements.values():
            e = g.edge(s.id, el.key, "tap")
            if el.key == f"{el.cls}:{el.label}" and el.labels == [el.label] and e is not None \
                    and e.effect in NEW_SCREEN:
                alike.setdefault((e.effect, e.dst), []).append(el)
        picks = max(alike.values(), key=len, default=[])
        if len(picks) < 2:
            return []
        names = {p.label for p in picks}
        shown = {lab for el in s.elements.values() for lab in el.labels}
        supers = [(other, x) for other in g.screens.values() for x in other.elements.values()
                  if len(x.labels) > len(names) and names <= set(x.labels)]
        if not supers:
            return []
        said = [lab for _, x in supers for lab in set(x.labels) - shown
                if self.rel.slot_hits(lab, self.task.slots)[0] >= 0.8]
        # (or a name the task calls one of them: "the Landlords label", made since exploring)
        kinds = words_of(s.title, *(other.title for other, _ in supers))
        said += [sl.text for sl in self.task.slots if sl.kind == "name" and sl.text not in shown and any(
            word_match(w, kinds) for w in words_of(" ".join(self.task.text[sl.end:].split()[:1])))]
        cls, kind = picks[0].cls, picks[0].kind
        return [(UIElement(f"{cls}:{lab}", lab, kind, cls, fixed=picks[0].fixed, labels=[lab]), picks[0].key)
                for lab in dict.fromkeys(said)]

    def _of(self, g: AppGraph, s: UIScreen, el: UIElement, unused: list[int], twin: str = ""):
        """The goals an element offers (none for a plain way to another screen); ``twin``: the
        key of the element whose edge it shares (itself unless ``_kin`` made it)."""
        task = self.task
        tap = g.edge(s.id, twin or el.key, "tap")
        kind = _kind(g, s, el, tap)
        if kind is None:
            return
        if s.entry and (re.fullmatch(r"\d{1,2}|AM|PM", el.label.strip()) or "hour" in el.key
                        or "minute" in el.key or "mode" in el.key or "digit" in el.key
                        or re.search(r"delete|clear|backspace", f"{el.key} {el.label}", re.I)):
            return          # a dial's or keypad's keys are set by the entry macro, not goals
        if re.search(r"\bsearch\b", f"{el.label} {el.key}", re.I) and not self.searching:
            return          # a search is a way to an object, never what a task is for (unless it says so)
        action = "type" if kind == "field" else "tap"
        live = getattr(self, "_live", None)
        now = live[2].get(el.key) if live is not None and live[0] == s.id and len(live) > 2 else None
        # one of a set of options under one id (a list of choices, the days of an alarm): the
        # goal is the option the task names, by a slot or by its words
        options = kind in ("pick", "choice", "switch", "slider") and len(set(el.labels)) > 1
        # a data row's label names its row (a contact, a message), not what tapping it does
        # (on the screen in front its label is read as it is now: "Remove Running club" on
        # Maya's page says what the task says)
        data = el.varies and not options and now is None
        label = now or el.label
        flipped = False           # the other state of a two-state button, as the task says it
        if now is None and not options and not el.varies and el.fixed and len(set(el.labels)) == 2:
            # a two-state button ("Remove from favorites" / "Add to favorites"): the goal is the
            # state the task asks for, whichever exploration first saw
            # (of two as near, the one that takes away when the task does: "unstar", "remove")
            undoing = bool(SENSITIVE.search(self.plain)) or any(undo(w) != w for w in self.rel.words)
            said = max(el.labels, key=lambda lab: (self.rel.verb_hit(lab) + self.rel.lexical(lab, verb=False),
                                                   bool(SENSITIVE.search(lab)) == undoing))
            if self.rel.verb_hit(said) + self.rel.lexical(said, verb=False) > 0 and said != label:
                label, flipped = said, True   # (one the task does not say stays as seen, with what it does)
        slot, which = 0.0, None
        if options:
            ranked = sorted(el.labels, key=lambda lab: (-self.rel.slot_hits(lab, [task.slots[i] for i in unused])[0],
                                                        -self.rel.lexical(lab)))
            label = ranked[0]
        if not data and kind != "field":      # a field shows what was typed in it, not what it is
            slot, which = self.rel.slot_hits(label, [task.slots[i] for i in unused])
            if kind == "slider" and slot < 0.8:     # a step of its scale it was never seen at
                which = next((task.slots[i] for i in unused if on_scale(task.slots[i], el.labels)), which)
                slot = 0.8 if which is not None else slot
        goal = Goal(s.id, el.key, action, kind, label, option=label if options and kind == "switch" else "")
        own = [] if data else [label, el.detail, el.key.replace("_", " ") if not el.key.startswith(el.cls) else ""]
        if tap is not None and tap.effect == "relabel" and not data:
            own += tap.detail.get("labels", [])         # a toggle button's other state
        verb = self.rel.verb_hit(*own)
        lex = self.rel.lexical(*own, verb=False)
        if kind in ("commit", "relabel", "button") and verb >= 1.0 and not lex and not data and \
                words_of(label) - {self.rel.verb} - synonyms(self.rel.verb):
            verb = 0.5           # the task's verb on another thing ("Add to favorites" for a label)
        context = 0.5 * self.rel.lexical(s.title, *g.way_labels(s.id)[-1:])
        unnamed = options and kind == "switch" and slot < 0.5 and not self.rel.lexical(label)
        goal.score = (1.0 * verb + 1.0 * lex + context + (1.0 if options else 0.6) * slot
                      + PRIOR.get(kind, 0.0) - (0.4 if unnamed else 0.0))
        if kind == "switch" and task.polarity is not None:
            goal.want = task.polarity
            goal.score += 0.15
        elif kind == "switch" and which is not None and which.kind == "day":
            goal.want = not REMOVE_DAY.search(self.plain)     # a day the alarm rings on, unless taken off
        if tap is not None and tap.sensitive and SENSITIVE.search(tap.sensitive) and (
                not flipped or SENSITIVE.search(label)) and (
                not self.rel.verb_hit(tap.sensitive, label) and not self.rel.lexical(tap.sensitive)
                or words_of(tap.sensitive) <= self.qualifiers
                # what cannot be undone is done only when said in its own word ("delete
                # Kiswahili" tapped "Reset options": reset is a synonym of delete for a timer)
                or STRICT.search(tap.sensitive) and self.rel.verb_hit(tap.sensitive, label) < 1.0
                and self.rel.lexical(tap.sensitive) < 1.0):
            goal.score -= 1.5        # a call, a send, a payment the task does not ask for: never a goal
        if self.looking and kind in ("switch", "choice", "relabel", "commit", "content") \
                and not NAVIGATE.search(label):       # ("Check for update" is what "check for updates" asks)
            goal.score -= 1.0        # a task that asks to look at something switches nothing on

        if s.id in self.unnamed(g) and kind in ("commit", "switch", "relabel", "content"):
            goal.score -= 0.6        # it acts on a row's object the task does not name
        if kind in ("pick", "choice") and words_of(label) and not slot:
            unsaid = {w for w in words_of(label) if not word_match(w, set(self.rel.words))}
            goal.score -= 0.3 * len(unsaid) / len(words_of(label))   # of options alike, the one said
            # without more ("the lock screen wallpaper": Lock screen, not Home and lock screens)
        times = {task.slots[i].value for i in unused if task.slots[i].kind == "time"}
        shown = {clock_of(x) for x in (el.detail, label)} - {None}
        if kind in ("pick", "choice") and times and shown and not shown & times:
            goal.score -= 0.8        # an option that sets another time than the task's ("Later today, 6:00 PM")
        if re.match(r"(cancel|dismiss|discard)\b", label, re.I) and not re.search(r"\b(cancel|dismiss|discard)",
                                                                                 self.plain, re.I):
            goal.score -= 1.0        # undoing what was just set up ("Cancel scheduled send") is no goal
        if kind == "slider" and extreme(task.text) is None and not comparative(task.text) and not slot:
            goal.score -= 1.0        # only a slider's ends, a value it shows or a step can be set
        if kind != "field" and other_action(self.rel, label):
            goal.score -= 0.5        # "Schedule message" does what its verb says, not the task's "send"
        elif kind in ("pick", "choice", "commit", "switch") and any(
                other_action(self.rel, w) and CREATING.match(w) for w in g.way_labels(s.id)[-1:]):
            goal.score -= 0.5        # on a screen opened for another job (a city in the Add city picker)
        if kind == "switch" and not options and label != el.key.replace("_", " ") and not lex and not verb:
            goal.score -= 0.3        # a switch named for something the task does not say ("Vibrate")
        if kind == "switch" and not options and task.polarity is None and not lex and not verb:
            goal.score -= 0.8        # nor says to turn anything on or off (an alarm's own switch)
        takes = {"time": ("time",), "date": ("date",), "digits": ("duration", "number", "phone")}.get(s.entry, ())
        if kind == "commit" and s.entry and not any(task.slots[i].kind in takes for i in unused):
            goal.score -= 0.5          # a time picker's OK sets a time the task does not give
        elif kind == "commit" and (s.entry or any(x.kind in ("field", "password") for x in s.elements.values())) \
                and (s.entry or self._covers(s, el, unused)):
            goal.score += 0.3          # what a form or a picker is confirmed with (when the task fills it:
                                       # not a Label dialog when the label only names the alarm)
            if not CREATE.search(self.plain) and any(CREATING.match(w) for w in g.way_labels(s.id)[-1:]) and any(
                    task.slots[i].kind == "name" and task.slots[i].value != "called" for i in self._covers(s, el, unused)):
                goal.score -= 1.1      # the form of something new, when the task makes nothing new: "set
                                       # the company for Noah Quinn" made a new contact named Noah Quinn
        if kind == "field":
            from .fields import field_fit

            text = " ".join([el.label, el.detail, el.key.replace("_", " "), s.title]).lower()
            fit, best = max(((field_fit(text, task.slots[i], task.text, el.kind == "password"), i) for i in unused
                             if i not in self.ident or task.slots[i].kind != "text"), default=(0.0, None))
            # a field is a goal only for a slot it suits, and not for one a row already shows
            # (the message to star is picked from the conversation, not typed again)
            goal.score += 0.5 * min(fit, 1.0) - 0.5
            if best is not None and task.slots[best].kind == "name" and task.slots[best].value != "called" \
                    and not CREATE.search(self.plain) and any(CREATING.match(w) for w in g.way_labels(s.id)[-1:]):
                goal.score -= 0.8    # the name for something new, when the task makes nothing new
                                     # (a person's name typed as a new label's name)
            elif best is not None and task.slots[best].kind == "name" and best not in self.made \
                    and (best in self.ident or any(best in slots for slots, _, _ in self._row_slots(g))):
                goal.score -= 0.5    # a name a list shows is there to choose, not to type ("add Marcus
                                     # to the Friends label" typed Friends over the Family label's name)
            elif best is not None and best in self.made and task.slots[best].kind == "name" \
                    and any(CREATING.match(w) for w in g.way_labels(s.id)[-1:]):
                goal.score += 0.5    # the name of what the task makes, on the form that makes it ("in a
                                     # new label called Soccer" beat "Add contacts" to an existing label)
        covers = self._covers(s, el, unused)
        live = getattr(self, "_live", None)
        if live is not None and live[0] == s.id and (el.row or not el.fixed):
            covers |= live[1] & set(unused)
        named = 0.0          # the object the task names is chosen on the way (a contact's row)
        sure = set(covers)   # slots it takes for certain (not a row merely shaped like the slot)
        for slots, like, after in self._row_slots(g):
            if s.id in after:
                covers |= (slots | like) & set(unused)
                sure |= slots & set(unused)
                names = [i for i in unused if task.slots[i].kind in ("name", "phone")]
                if names:
                    named = max(named, (0.4 * len(slots & set(names)) + 0.15 * len(like & set(names))) / len(names))
        if which is not None and slot >= 0.5:      # (a "5" shared by "JBL Flip 5" and "5 minutes" is not it)
            covers.add(task.slots.index(which))
            sure.add(task.slots.index(which))
        goal.covers = sorted(covers)
        # (a quoted name exploration saw must go somewhere too: the goal that chooses it)
        values = [i for i in unused if is_value(task.slots[i]) and (i not in self.ident or i in self.known_names())]
        if values:
            # a quoted sentence a list of messages might hold counts half: the task may give it
            # as a value to type ("send … saying 'X'") rather than to find
            share = sum(1.0 if i in sure else 0.5 for i in goal.covers if i in values) / len(values)
            goal.score += 0.6 * share if share else -1.0   # a value the task gives must go somewhere
        elif unused:
            goal.score += 0.1 * len(goal.covers) / len(unused)
        goal.score += named
        yield goal, describe(g, s, el, tap, label if options else "")

    def _covers(self, s: UIScreen, el: UIElement, unused: list[int]) -> set[int]:
        """Slots this goal's screen can take: its text fields (those that suit them), a time
        dial, a keypad."""
        from .fields import field_fit

        out: set[int] = set()
        fields = [x for x in s.elements.values() if x.kind in ("field", "password")]
        for i in unused:
            slot = self.task.slots[i]
            k = slot.kind
            if k in ("text", "email", "phone", "name", "number", "date") and (i not in self.ident or k != "text") and any(
                    field_fit(" ".join([x.label, x.detail, x.key.replace("_", " "), s.title]).lower(), slot,
                              self.task.text, x.kind == "password") >= 0.5 for x in fields):
                out.add(i)
            if k in ("text", "name", "phone") and s.title and self.rel.slot_hits(s.title, [slot])[0] >= 0.6:
                out.add(i)      # a page or dialog titled by the object (the network 'NETGEAR42')
            if s.entry == k in ("time", "date") or s.entry == "date" and k == "time":
                out.add(i)      # (a calendar's OK takes the time said with the date: its picker follows)
            if s.entry == "digits" and k in ("duration", "number", "phone"):
                out.add(i)
        return out


# a word that only qualifies a setting ("the alarm volume", "call volume"): no alarm, no call
QUALIFIER = re.compile(r"\b(\w+)\s+(?:volume|sound|ringtone|tone)s?\b", re.I)


def qualifiers(text: str) -> set[str]:
    return words_of(*QUALIFIER.findall(text))


# a task that wants a slider at one end ("max out the media volume", "as large as possible")
EXTREME = {"max": re.compile(r"\b(max(imum|ed)?|max out|highest|loudest|largest|biggest|full|all the way up|"
                            r"as (large|loud|high|big) as (it goes|possible)|100 ?%)", re.I),
           "min": re.compile(r"\b(min(imum)?|lowest|quietest|smallest|all the way down|"
                            r"as (small|low|quiet) as (it goes|possible))", re.I)}


def extreme(text: str) -> str | None:
    """``max`` or ``min`` when the task wants a slider at that end, else None."""
    return next((end for end, rx in EXTREME.items() if rx.search(text)), None)


# a task that wants one step more or less ("make the text bigger"), not a named value
MORE = re.compile(r"\b(bigger|larger|increase|louder|brighter|higher|raise)\b", re.I)
LESS = re.compile(r"\b(smaller|decrease|quieter|dimmer|lower|reduce)\b", re.I)


def comparative(text: str) -> int:
    """+1 for "bigger", -1 for "smaller", 0 when the task says neither."""
    up, down = bool(MORE.search(text)), bool(LESS.search(text))
    return up - down



# the words size settings step through, smallest first
SCALE = ["smallest", "smaller", "small", "default", "normal", "medium", "large", "larger", "largest", "huge"]


def on_scale(slot, labels: list[str]) -> bool:
    """Whether a slot is a step of the scale these slider labels show: a size word among size
    words, a percentage among percentages."""
    text = slot.text.strip().lower()
    if text in SCALE:
        return any(lab.strip().lower() in SCALE for lab in labels)
    if re.fullmatch(r"\d+(?:\.\d+)?%", text):
        return any(re.fullmatch(r"\d+(?:\.\d+)?%", lab.strip()) for lab in labels)
    return False


PRIOR = {"slider": 0.2, "switch": 0.25, "choice": 0.2, "commit": 0.15, "relabel": 0.2, "content": 0.1,
         "pick": 0.1, "field": 0.05, "navigate": 0.2, "button": 0.0}


def _kind(g: AppGraph, s: UIScreen, el: UIElement, tap: UIEdge | None) -> str | None:
    if el.cls == "SeekBar":
        return "slider"
    if el.kind == "switch":
        return "switch"
    if el.kind == "choice":
        return "choice"
    if el.kind in ("field", "password"):
        return "field"
    if el.kind == "item":
        return None
    if tap is None:                                # never tried: could be anything but a way out
        return None if NEGATIVE.match(el.label.strip()) else "button"
    if tap.effect in TERMINAL_EFFECTS:
        return {"toggle": "switch", "untried": "button"}.get(tap.effect, tap.effect)
    if NEGATIVE.match(el.label.strip()):
        return None
    if s.entry and el.fixed and tap.effect == "screen" and not el.key.startswith("FrameLayout:") \
            and not re.search(r"digit|delete|navigate", f"{el.key} {el.label}", re.I):
        return "commit"          # what a keypad's value is started with (the timer's Start)
    pickable = not el.fixed or s.kind in ("dialog", "sheet", "menu") or len(el.labels) > 1
    if pickable and tap.effect in NEW_SCREEN and tap.dst is not None and _returns(g, s, tap) \
            and not _selection(g, s, el):
        return "pick"
    return None


NEGATIVE = re.compile(r"^(cancel|no|not now|dismiss|close|never|deny|skip|later|navigate up|"
                      r"collapse.*|exit.*|back)$", re.I)


CONFIRMS = {"done", "ok", "apply", "next", "select"}


def other_action(rel: Relevance, label: str) -> bool:
    """A label that opens with an action verb the task neither asks for (nor a synonym or the
    opposite of its verb) nor says anywhere: a button for another job."""
    m = VERBS.match(label.strip())
    if m is None or not rel.verb or rel.verb in VAGUE:
        return False
    said = stem(m.group(1))
    return said not in {stem(w) for w in CONFIRMS} | VAGUE and not word_match(rel.verb, {said}) \
        and said not in words_of(rel.task.text)


def _selection(g: AppGraph, s: UIScreen, el: UIElement) -> bool:
    """A list in selection mode (opened by a long press on its own rows): tapping a row there
    selects or deselects it, it picks nothing."""
    return any(e.dst == s.id and e.action == "long_press" and e.key == el.key
               for t in g.screens for e in g.edges_of(t))


def _returns(g: AppGraph, s: UIScreen, tap: UIEdge) -> bool:
    """Tapping it goes back towards the app's first screen (a picker's row returns to what
    opened the picker), not further in."""
    depth = g.depths()
    return tap.dst in depth and s.id in depth and depth[tap.dst] < depth[s.id]


def clock_of(text: str) -> tuple[int, int] | None:
    """The time a label shows ("Thu 8:00 AM" -> (8, 0)), 24-hour; None for none."""
    m = re.search(r"\b(\d{1,2}):(\d{2})\s?([AP])\.?M\b", text or "", re.I)
    if m is None:
        return None
    hour = int(m.group(1)) % 12 + (12 if m.group(3).upper() == "P" else 0)
    return hour, int(m.group(2))


def shaped(label: str, slot: Slot) -> bool:
    """Whether a data row's label is the kind of thing a slot names — a row of people for a
    name, of numbers for a phone number, of messages for a quoted sentence: the object may be in
    that list though exploration did not see it (it was added since)."""
    if slot.kind == "name":      # a person's name (two or three words) in a list of such names;
        words, want = label.split(), slot.text.split()    # a one-word name (a language, a city)
        if not words or re.search(r"\d", label):         # in a list of names
            return False
        capital = all(w[:1].isupper() or not w[:1].isascii() for w in words if w.isalpha())
        person = all(w[:1].isupper() for w in want if w.isalpha())     # "Study group" is no one's name
        return capital and (2 <= len(want) <= 3 and person and len(words) <= 4 or len(want) == 1 and len(label) >= 3
                            and (len(words) == 1 or "(" in label))    # (not a list's section letter)
    if slot.kind == "phone":
        return len(re.sub(r"\D", "", label)) >= 7
    if slot.kind == "time":      # an alarm's time on its card
        return bool(re.fullmatch(r"\d{1,2}:\d{2}(\s?[AP]\.?M\.?)?", label.strip(), re.I))
    if slot.kind == "text":      # a sentence (lower-case words), not a row of names or days
        return len(label.split()) >= 3 and len(slot.text.split()) >= 2 and \
            sum(w[:1].islower() for w in label.split()) >= 2
    return False


PERSON = Slot("name", "Ana Rodriguez", None, 0, 0)      # the shape of a person's name


def listed_like(labels: list[str], slot: Slot) -> bool:
    """A list of the kind of thing the slot names: most of its rows are shaped like it (a
    chat's "Starred" is no list of people)."""
    return bool(labels) and 2 * sum(shaped(lab, slot) for lab in labels) >= len(labels)


def onward(g: AppGraph, start: int) -> set[int]:
    """Screens reachable from ``start`` without climbing back towards the app's first screen."""
    depth = g.depths()
    seen, todo = {start}, [start]
    while todo:
        s = todo.pop()
        for e in g.edges.values():
            if e.src == s and e.dst is not None and e.effect in NEW_SCREEN and e.dst not in seen \
                    and depth.get(e.dst, 99) >= depth.get(s, 0):
                seen.add(e.dst)
                todo.append(e.dst)
    return seen


def slot_indices(task: TaskInfo, kinds: tuple[str, ...]) -> list[int]:
    return [i for i, s in enumerate(task.slots) if s.kind in kinds]


def best_slot(task: TaskInfo, label: str, unused: list[int], rel: Relevance) -> tuple[float, Slot | None]:
    return rel.slot_hits(label, [task.slots[i] for i in unused])
