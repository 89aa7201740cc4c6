"""Forms and pickers: which slot each text field takes and what is typed there (a first name,
a last name, a company), and the steps that set a time picker or a timer keypad to a slot."""
from __future__ import annotations

import re

from .entry import date_step, digits_step, duration_digits, entry_kind, time_step
from .fields import field_fit
from .goals import VALUE_KINDS
from .graph import element_key
from .progress import Progress
from .screen import Element, Screen
from .slots import Slot, slot_match, split_name
from .step import Step


TYPABLE = re.compile(r"[\x20-\x7e]*")     # what `input text` can type


def field_id(e: Element) -> str:
    """A text field's identity through what is typed in it (its label is its text)."""
    return e.rid or f"{e.cls}@{e.bounds}"


def foreign_text(screen: Screen, known: dict, typed: dict[str, str]) -> list[str]:
    """What this screen's fields hold that neither exploration saw there (a field's first label
    is its hint) nor this episode typed: a form someone left open. ``known``: the screen's
    catalogue (element key -> UIElement)."""
    out = []
    for e in screen.elements:
        if not e.editable or e.password or is_search(e) or not e.label:
            continue
        el = known.get(element_key(e))
        if el is not None and e.label != el.label and e.label != typed.get(field_id(e)):
            out.append(e.label)
    return out


def is_search(e: Element) -> bool:
    """A search box: what is typed there looks for something, it is no value to confirm."""
    return bool(re.search(r"search", f"{e.label} {e.rid}", re.I))


def _part_of(text: str, name: str) -> bool:
    """Whether a field's text is a part of a name ("Maya" of "Maya Petrov": her first name)."""
    words = text.lower().split()
    return bool(words) and set(words) <= set(name.lower().split())


def _holds_kind(text: str, kind: str) -> bool:
    """Whether a field's text is a value of this kind (an address in the email field)."""
    if kind == "email":
        return re.fullmatch(r"\S+@\S+\.\w+", text.strip()) is not None
    if kind == "phone":
        return len(re.sub(r"\D", "", text)) >= 7 and re.fullmatch(r"[\d\s()+.-]+", text.strip()) is not None
    return False


# entry widget -> (the slot kind it takes, the macro's next step toward a slot, how to say it)
MACROS = {
    "time": ("time", lambda screen, s: time_step(screen, *s.value), "set the time to"),
    "date": ("date", lambda screen, s: date_step(screen, *(s.value or (None, None))), "set the date to"),
    "digits": ("duration", lambda screen, s: digits_step(screen, duration_digits(s.value)), "enter"),
}
# a task that renames someone may type over their name
RENAME = re.compile(r"\b(rename|change (?:the |their |his |her )?(?:first |last )?name|correct|fix)\b", re.I)
NAME_FIELDS = {"first": ("first", "given"), "last": ("last", "surname", "family")}


class Forms:
    def __init__(self, task):
        self.task = task
        self._title = ""          # the screen in front's title (a dialog's says what its field is for)

    def fill(self, screen: Screen, p: Progress) -> list[Step]:
        """Type the slots this screen's fields take (a form is filled before it is saved); times
        and durations are set on their dial or keypad instead (``entry``)."""
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
            if p.typed.get(field_id(e)):
                continue
            slot = self.slot_for_field(e, p)
            if slot is not None and is_search(e) and not TYPABLE.fullmatch(self.task.slots[slot].text):
                slot = None       # a search is only a shortcut: "Ελληνικά" is scrolled to, not typed
                                  # (`input text` types ASCII only; the phone would refuse it)
            if slot is not None:
                text = self.text_for(e, self.task.slots[slot])
                uses = slot
                if text != self.task.slots[slot].text and any(     # a first name: the last name is left
                        f is not e and not p.typed.get(field_id(f)) and
                        self.text_for(f, self.task.slots[slot]) not in (text, self.task.slots[slot].text)
                        for f in fields):
                    uses = None
                out.append(Step("type", e, text, uses, why=f'type "{text}" in {e.label}'))
        return out[:1]

    def slot_for_field(self, e: Element, p: Progress) -> int | None:
        """The slot a field takes: by its kind (a phone number, an email…) and the words next to
        the slot in the task ("works at Acme" goes to Company)."""
        label = " ".join([e.label, e.desc, e.rid.replace("_", " "), self._title]).lower()
        if e.text and not RENAME.search(self.task.text) and not _holds_kind(e.text, "email") and any(
                slot_match(self.task.slots[j], e.text) >= 0.5 or _part_of(e.text, self.task.slots[j].text)
                for j in p.used | p.ident if self.task.slots[j].kind == "name"):
            return None           # it holds the name of the person the task is about: not to overwrite
        best, score = None, 0.0
        for i in p.unused():
            s = self.task.slots[i]
            if s.kind in ("time", "duration", "ordinal", "day"):
                continue
            if i in p.ident and s.kind == "text" and "search" not in label:
                continue          # a message a row shows is the object to pick, not text to type
            sc = field_fit(label, s, self.task.text, e.password)
            if not sc and e.text and _holds_kind(e.text, s.kind):
                sc = 1.0          # it holds an email now (its hint gone): the email field
            if not sc and e.text and s.kind == "text":
                # the value it holds is data ("Travel phone" in Device name), not what it is for
                bare = " ".join([e.desc, e.rid.replace("_", " "), self._title]).lower()
                sc = 0.8 * field_fit(bare, s, self.task.text, e.password)
            if sc > score:
                best, score = i, sc
        return best if score > 0 else None

    def text_for(self, e: Element, slot: Slot) -> str:
        if slot.kind == "name":
            label = " ".join([e.label, e.rid]).lower()
            first, last = split_name(slot.text)
            if any(w in label for w in NAME_FIELDS["first"]) and last:
                return first
            if any(w in label for w in NAME_FIELDS["last"]) and last:
                return last
        return slot.text

    def entry(self, screen: Screen, p: Progress) -> Step | None:
        """The next tap (or typing) that sets the dial, calendar or keypad in front to the slot it
        takes; None once it shows it (the slot then waits for the widget's OK)."""
        macro = MACROS.get(entry_kind(screen))
        if macro is None:
            return None
        kind, step, what = macro
        for i in p.unused():
            s = self.task.slots[i]
            if s.kind == kind:
                nxt = step(screen, s)
                if nxt is None:
                    p.used.add(i)          # the widget shows it: confirmed with its OK
                    p.wait(i)
                    return None
                action, el, text = nxt
                return Step(action, el, text, why=f"{what} {s.text}: {action} {el.label}")
        return None

