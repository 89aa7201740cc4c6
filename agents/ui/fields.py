"""Which text field a slot goes into: by the slot's kind (a phone number into a phone field,
an email into an email field) and by the words the task puts next to it ("works at Acme" goes
to Company, "with the password 'x'" to the password field, 'label "gym"' to the Label field)."""
from __future__ import annotations

import re

from .relevance import _SYN, words_of
from .slots import Slot

KIND_WORDS = {"phone": {"phone", "number", "mobile", "to", "recipient", "recipients"},
              "email": {"email", "e-mail", "mail", "to", "recipient", "recipients"},
              "time": {"time", "hour"}, "date": {"date"}, "number": {"number", "amount", "quantity"}}
NAME_WORDS = {"name", "first", "last", "to", "recipient", "recipients", "search", "label", "title",
              "group", "city", "contact", "contacts"}
GENERIC_TEXT = {"message", "text", "note", "search", "title", "subject", "label"}


def field_fit(label: str, s: Slot, task: str, password: bool) -> float:
    """How well slot ``s`` suits a field described by ``label`` (its text, hint and id): 0 when
    it does not go there, about 1 when it clearly does."""
    words = set(re.findall(r"[a-z]+(?:-[a-z]+)?", label.lower()))
    stems = words_of(label)
    before = task[max(0, s.start - 40):s.start].lower()
    near = words_of(" ".join(re.findall(r"[a-z]+", before)[-4:]))
    if password:
        return 1.0 if re.search(r"\b(password|passcode|pin)\b", before) else 0.0
    if "search" in words and s.kind == "text" and not re.search(r"\b(search|find|look)", task, re.I):
        return 0.0          # a search box takes a name to look for (a city, a contact), not a value
                            # to enter (a file name, a message)
    if s.kind in KIND_WORDS:
        if words & KIND_WORDS[s.kind]:
            return 1.1
        if any(words & ws for k, ws in KIND_WORDS.items() if k != s.kind) or "password" in words:
            return 0.0
        return 0.3 if s.kind == "number" else 0.0
    if s.kind == "name":
        if words & {"company", "organization", "employer"}:
            return 1.2 if re.search(r"\b(works? (at|for)|company|employer|at)\s*$|\b(company|employer)\b.*\bto\s*$",
                                    before) else 0.0
        if words & {"phone", "email", "message", "password"}:
            return 0.0
        if words & {"label", "name", "title"} and re.search(r"\b(called|named|titled)\s*[\"'“‘]?$", before):
            return 1.2      # 'a new label called Study group' is what its name field holds
        return 0.9 if words & NAME_WORDS else 0.1
    if s.kind == "text":
        if words & {"phone", "email", "password"} or stems & {"first", "last"}:
            return 0.0
        score = 0.1
        if _shares(near, stems):
            score += 0.8
        elif _shares(words_of(task[:s.start] + " " + task[s.end:]), stems):    # (not the value's own words)
            score += 0.4
        if words & GENERIC_TEXT:
            score += 0.3
        if words & {"label", "name", "title"} and re.search(r"\b(called|named|titled|label(?:l?ed)?|name)\s*[\"'“‘]?$", before):
            score += 0.6        # 'an alarm called "Bin day"' is what its Label field holds
        return score
    return 0.0


def _shares(a: set[str], b: set[str]) -> bool:
    return bool(a & b) or any(_SYN.get(w, set()) & b for w in a)
