"""What a task names: its slots (quoted text, emails, phone numbers, times, durations, numbers,
days, names) and the words left over. Slots are the only text the agent ever types, and what it
looks for in list rows (the contact, the conversation, the alarm), so the model never spells
anything a slot can give.

    analyze('Text Priya Patel "Happy birthday!"')
    -> slots: name "Priya Patel", text "Happy birthday!"; words: text
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .languages import same_language

QUOTED = re.compile(r'"(?P<q>[^"]{1,200})"|“(?P<q2>[^”]{1,200})”|‘(?P<q3>[^’]{1,200})’'
                    r"|(?<![\w])'(?P<q4>.{1,200}?)'(?![\w])")
FILE = re.compile(r"\b[\w-]+\.(?:vcf|csv|txt|pdf|jpe?g|png|docx?|zip|mp3|mp4)\b", re.I)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
PHONE = re.compile(r"(?<![\w:])(?:\+?\d{1,2}[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?!\w)"
                   r"|(?<![\w:])\d{3}-\d{4}(?!\w)"
                   r"|(?<![\w:.])\+?1?\d{10}(?!\w|\.\d)")     # a number written without separators
TIME = re.compile(r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>a\.?m\.?|p\.?m\.?)(?![a-z])"
                  r"|\b(?P<h24>[01]?\d|2[0-3]):(?P<m24>[0-5]\d)\b|\b(?P<word>noon|midnight)\b", re.I)
DURATION_PART = r"(?P<n{i}>\d+|an?|one|two|three|four|five|ten|fifteen|thirty)\s*(?P<u{i}>h(?:ou)?rs?|min(?:ute)?s?|sec(?:ond)?s?)\b"
DURATION = re.compile(r"\b" + DURATION_PART.format(i=1) + r"(?:\s*(?:and\s+)?" + DURATION_PART.format(i=2)
                      + r")?(?:\s*(?:and\s+)?" + DURATION_PART.format(i=3) + r")?", re.I)
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?%?(?![\w])")
ORDINAL = re.compile(r"\b(first|second|third|fourth|fifth|last)\b(?!\s+names?\b)", re.I)
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
DATE = re.compile(r"\b(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b"
                  r"|\b(?P<d2>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon2>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I)
TOMORROW = re.compile(r"\btomorrow\b", re.I)
CALLED = re.compile(r"\b(?:called|named|titled)\s+(?P<n>[^\s,.;:!?'\"“‘][^,.;:!?\"“”]*?)(?=\s+(?:with|and|to|for|who|in|on|from|that|using)\b|[,.;:!?]|$)")
RENAMED = re.compile(r"\b(?i:rename)\b.*?\bto\s+(?P<n>[A-Z][^,.;:!?\"“”\x00]*?)\s*[.!?]?\s*$")
# an object named before its kind, in lower case after a capital ("the Study group label")
KIND_NAMED = re.compile(r"\b(?:my|the|your)\s+(?P<n>[A-Z][\w'’-]*(?:\s+[a-z][\w'’-]*){1,2})\s+"
                        r"(?:label|group|playlist|folder|album)\b")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DAY = re.compile(r"\b(mon|tue|wed|thu|fri|sat|sun)(?:day|sday|nesday|rsday|urday)?s?\b|\b(weekdays?|weekends?)\b", re.I)
NAME = re.compile(r"(?<![\w'’])(?:[A-Z][\w'’.-]*|[0-9]+[A-Z][\w-]*)(?:\s+(?:[A-Z][\w'’.-]*|&|de|da|van|von|of))*"
                  r"(?:\s*\([A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*\))?")
# a thing named with a model number ("Fitbit Charge 6", "JBL Flip 5"): one name, not a name and a number
PRODUCT = re.compile(r"(?<![\w'’])[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*\s+\d{1,3}[A-Za-z]?"
                     r"(?:\s+(?:Pro|Plus|Max|Ultra|Lite|Mini|II|III|XL|SE))*\b"
                     r"(?!\s*(?:%|[:.,]\d|[ap]\.?m\b|h(?:ou)?rs?\b|min|sec|days?\b|times?\b))")
WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
LETTERS = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")      # words in any script ("한국어", "Español")
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10,
                "fifteen": 15, "thirty": 30}
# capitalized words that are not names: sentence starts, apps, places in the phone
NOT_NAMES = {"google", "clock", "messages", "message", "contacts", "contact", "settings", "phone",
             "android", "my", "the", "a", "an", "in", "on", "i", "please", "can", "could", "you",
             "pm", "am", "wi-fi", "wifi", "ok", "world", "add", "set", "turn", "delete", "remove",
             "create", "send", "text", "change", "make", "open", "check", "view", "show", "start",
             "stop", "pause", "resume", "reset", "cancel", "enable", "disable", "block", "unblock",
             "archive", "rename", "label", "edit", "call", "search", "find", "go", "record", "put",
             "schedule", "star", "pin", "unpin", "mute", "forward", "save", "export", "merge",
             "sort", "select", "choose", "use", "connect", "pair", "mark", "replace", "also",
             "new", "let", "lets", "help", "what", "when", "is", "are", "tell", "display", "email",
             # more verbs a task starts with ("Update Freya's email" names Freya, not "Update Freya")
             "update", "modify", "reschedule", "move", "give", "keep", "allow", "switch", "fix", "write",
             "name", "tag", "unstar", "unmute", "unarchive", "restore", "dial", "snooze", "dismiss",
             "repeat", "share", "copy", "reply", "resend", "lock", "unlock", "install", "uninstall",
             "clear", "erase", "disconnect", "forget", "increase", "decrease", "raise", "lower", "silence"}
STOP = {"a", "an", "the", "to", "of", "for", "in", "on", "at", "with", "and", "or", "my", "your",
        "me", "please", "using", "from", "by", "that", "this", "it", "its", "is", "be", "as",
        "saying", "says", "named", "called", "android", "phone's", "google", "app",
        "i", "you", "can", "could", "would", "also", "so", "all", "some", "there", "their"}
ON = re.compile(r"\b(turn(ed)? on|switch(ed)? on|enable|activate|start|show|allow|unmute|back on)\b"
                r"|\bon\s*[.!]?\s*$|\bturn\s+\w+(\s+\w+)?\s+on\b", re.I)
OFF = re.compile(r"\b(turn(ed)? off|switch(ed)? off|disable|deactivate|stop|hide|mute|off|don'?t|never)\b", re.I)


JOINED = re.compile(r"\s*(?:,|&|and|, and|or|, or)\s*", re.I)   # between names said together


@dataclass
class Slot:
    kind: str            # text, email, phone, time, duration, number, day, name, ordinal
    text: str            # as written in the task (what gets typed)
    value: object = None  # time: (hour 0-23, minute); duration: seconds; number: float; day: index
    start: int = 0
    end: int = 0

    def matches(self, label: str) -> float:
        """How well a screen's label shows this slot: 1 for the same thing, partial for a part
        (a first name of a full name), 0 for nothing."""
        return slot_match(self, label)


@dataclass
class TaskInfo:
    text: str
    slots: list[Slot] = field(default_factory=list)
    words: list[str] = field(default_factory=list)    # content words outside the slots, lowercase
    polarity: bool | None = None                       # turn on (True) / off (False)
    maximum: bool | None = None                        # as large (True) / as small (False) as possible

    def of(self, *kinds: str) -> list[Slot]:
        return [s for s in self.slots if s.kind in kinds]

    def together(self, i: int) -> set[int]:
        """The names named in one breath with slot ``i`` ("Ben Carter and Emily Chen", "Ana, Ben
        and Sam"): like objects, each to get the same done. Empty for a name said alone."""
        names = [j for j, s in enumerate(self.slots) if s.kind in ("name", "phone")]
        if i not in names:
            return set()
        group, k = {i}, names.index(i)
        for step in (-1, 1):
            at = k
            while 0 <= at + step < len(names):
                a, b = sorted((names[at], names[at + step]))
                if not JOINED.fullmatch(self.text[self.slots[a].end:self.slots[b].start]):
                    break
                group.add(names[at + step])
                at += step
        return group - {i}


def analyze(task: str) -> TaskInfo:
    text = " ".join(task.split())
    info = TaskInfo(text)
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    def add(kind: str, m: re.Match, value=None, group: int | str = 0) -> None:
        a, b = m.span(group)
        surface = m.group(group).strip()
        if kind == "time" and surface.endswith("."):      # "8 a.m." keeps its dots, "8 AM." not
            surface = surface[:-1] if not re.search(r"[ap]\.m\.$", surface, re.I) else surface
        if free(a, b):
            taken.append((a, b))
            info.slots.append(Slot(kind, surface, value, a, b))

    for m in QUOTED.finditer(text):
        add("text", m, group=next(g for g in ("q", "q2", "q3", "q4") if m.group(g) is not None))
    for m in FILE.finditer(text):           # before "named X": "named backup.vcf" names a file
        add("text", m)
    for m in CALLED.finditer(text):         # a name to give, typed (not one to find)
        add("name", m, "called", group="n")
    for m in RENAMED.finditer(text):        # "rename … to Study group": the new name, all of it
        add("name", m, "called", group="n")
    for m in KIND_NAMED.finditer(text):     # "my Study group label": the words before the kind
        add("name", m, group="n")
    for m in EMAIL.finditer(text):
        add("email", m)
    for m in PHONE.finditer(text):
        add("phone", m, re.sub(r"\D", "", m.group(0)))
    for m in TIME.finditer(text):
        add("time", m, _time(m))
    for m in DATE.finditer(text):
        add("date", m, _date(m))
    for m in TOMORROW.finditer(text):      # a date the phone's calendar knows (value None)
        add("date", m)
    for m in DURATION.finditer(text):
        add("duration", m, _seconds(m))
    for m in DAY.finditer(text):
        day = _day(m.group(0))
        if DATE.match(text[m.end():].lstrip(", ")):
            taken.append(m.span())      # "Tuesday, June 18": the weekday of a date, said twice
        elif day < 7:
            add("day", m, day)
        elif free(*m.span()):         # "every weekday": each of its days is a day to set
            taken.append(m.span())
            info.slots += [Slot("day", DAYS[d].capitalize(), d, *m.span()) for d in ((0, 1, 2, 3, 4) if day == 7 else (5, 6))]
    for m in ORDINAL.finditer(text):
        add("ordinal", m, m.group(1).lower())
    for m in PRODUCT.finditer(text):
        head = _name(m.group(0), m.start() == 0 or text[:m.start()].rstrip().endswith((".", "!", "?", ",")))
        words = [w for w in head.split() if not re.search(r"\d", w)]
        if words and head[0].isupper() and not all(w.lower() in NOT_NAMES for w in words):
            a = m.start() + m.group(0).find(head.split()[0])
            if free(a, m.end()):
                taken.append((a, m.end()))
                info.slots.append(Slot("name", text[a:m.end()], None, a, m.end()))
    for m in NUMBER.finditer(text):
        add("number", m, float(m.group(0).rstrip("%").replace(",", ".")))
    for m in NAME.finditer(text):
        name = _name(m.group(0), m.start() == 0 or text[:m.start()].rstrip().endswith((".", "!", "?", ",")))
        if name and re.match(r"\s+(folder|directory)\b", text[m.end():], re.I):
            continue                        # "in the Downloads folder": a place on screen, not typed
        if name:
            a = m.start() + m.group(0).find(name)
            if free(a, a + len(name)):
                taken.append((a, a + len(name)))
                info.slots.append(Slot("name", name, None, a, a + len(name)))
    for a, b in _unicased(text):            # a name in a script without capitals ("한국어", "日本語")
        if free(a, b):
            taken.append((a, b))
            info.slots.append(Slot("name", text[a:b], None, a, b))
    info.slots.sort(key=lambda s: s.start)
    rest = "".join(" " if any(a <= i < b for a, b in taken) else ch for i, ch in enumerate(text))
    rest = re.sub(r"['’]s\b", " ", rest)
    polar = {"turn", "on", "off", "enable", "disable", "switch", "activate", "deactivate", "back"}
    info.words = [w for w in WORD.findall(rest.lower()) if w not in STOP and len(w) > 1
                  and not (w in polar and (ON.search(rest) or OFF.search(rest)))]
    on, off = ON.search(rest), OFF.search(rest)
    if on and not off:
        info.polarity = True
    elif off and not on:
        info.polarity = False
    elif on and off:
        info.polarity = on.start() < off.start()
    if re.search(r"\b(max(imum)?|as (large|big|high|bright|loud|long) as possible|highest|largest|brightest|loudest)\b", text, re.I):
        info.maximum = True
    elif re.search(r"\b(min(imum)?|as (small|low|dim|quiet|short) as possible|lowest|smallest|dimmest)\b", text, re.I):
        info.maximum = False
    return info


def _unicased(text: str) -> list[tuple[int, int]]:
    """Spans of words written in a script other than Latin (Hangul, Han, Kana, Arabic, Devanagari,
    Cyrillic, Greek…): the NAME pattern looks for capitals, which most of them do not have."""
    out: list[tuple[int, int]] = []
    for m in re.finditer(r"\S+", text):
        word = m.group(0).strip(".,;:!?()\"'“”‘’«»")
        if word and any(ch.isalpha() and ord(ch) > 0x24F for ch in word) and not re.search(r"[A-Za-z0-9]", word):
            a = m.start() + m.group(0).find(word)
            if out and not text[out[-1][1]:a].strip():
                out[-1] = (out[-1][0], a + len(word))      # the next word of the same name
            else:
                out.append((a, a + len(word)))
    return out


def _name(text: str, sentence_start: bool) -> str:
    """A run of capitalized words as a name, without a leading verb or app name, nor a
    possessive. A sentence's first word is its verb ("Unstar", "Text") unless a known name..."""
    words = [re.sub(r"['’]s$", "", w) for w in text.split()]
    if sentence_start and words and (len(words) == 1 or words[0].lower() in NOT_NAMES):
        words.pop(0)
    while words and words[0].lower().strip(".") in NOT_NAMES and words[0].lower() in (
            "google", "clock", "messages", "contacts", "settings", "android", "in", "my", "the", "a", "an",
            "i", "please", "world"):
        words.pop(0)
    while words and words[-1].lower() in NOT_NAMES | {"&", "de", "da", "van", "von", "of"}:
        words.pop()
    name = " ".join(words)
    name = re.sub(r"['’]s$", "", name).rstrip(".,")
    if not name or name.lower() in NOT_NAMES or name.lower() in DAYS:
        return ""
    return name


def _time(m: re.Match) -> tuple[int, int]:
    if m.group("word"):
        return (12, 0) if m.group("word").lower() == "noon" else (0, 0)
    if m.group("h24") is not None:
        return int(m.group("h24")), int(m.group("m24"))
    h, mins = int(m.group("h")) % 12, int(m.group("m") or 0)
    if m.group("ap").lower().startswith("p"):
        h += 12
    return h, mins


def _date(m: re.Match) -> tuple[int, int]:
    mon = (m.group("mon") or m.group("mon2")).lower()[:3]
    return [x[:3] for x in MONTHS].index(mon) + 1, int(m.group("d") or m.group("d2"))


def _seconds(m: re.Match) -> int:
    total = 0
    for i in (1, 2, 3):
        n, unit = m.group(f"n{i}"), m.group(f"u{i}")
        if not n:
            continue
        count = int(n) if n.isdigit() else NUMBER_WORDS.get(n.lower(), 1)
        total += count * (3600 if unit.lower().startswith("h") else 60 if unit.lower().startswith("m") else 1)
    return total


def _day(text: str) -> int:
    t = text.lower()
    if t.startswith("weekday"):
        return 7
    if t.startswith("weekend"):
        return 8
    return [d[:3] for d in DAYS].index(t[:3])


def norm(text: str) -> str:
    """Text as a label is compared: lowercase, punctuation and spacing folded."""
    return " ".join(LETTERS.findall(text.lower().replace("\u2011", "-")))


def slot_match(slot: Slot, label: str) -> float:
    if not label or slot.kind == "ordinal":      # a position in a list, not a label
        return 0.0
    if slot.kind == "phone":
        digits = re.sub(r"\D", "", label)
        want = str(slot.value)
        if digits and (digits.endswith(want[-10:]) or want.endswith(digits[-10:])) and len(digits) >= 7:
            return 1.0
        return 0.0
    if slot.kind == "time":
        h, m = slot.value
        for tm in TIME.finditer(label):
            if _time(tm) == (h, m):
                return 1.0
        return 0.0
    if slot.kind == "duration":          # "+1:00", "1:30:00", "5 min"
        m = re.fullmatch(r"\+?\s*(?:(\d+):)?(\d{1,2}):(\d{2})", label.strip())
        if m and (int(m[1] or 0) * 3600 + int(m[2]) * 60 + int(m[3])) == slot.value:
            return 1.0
        d = DURATION.search(label)
        return 1.0 if d and _seconds(d) == slot.value else 0.0
    if slot.kind == "day":
        names = DAYS if slot.value < 7 else ()
        lab = label.lower()
        return 1.0 if names and (lab == DAYS[slot.value] or lab.startswith(DAYS[slot.value][:3])) else 0.0
    a, b = norm(slot.text), norm(label)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if slot.kind == "name" and not label[:1].islower():
        lang = same_language(slot.text, label)        # "Danish" is listed as "Dansk"
        if lang:
            return lang
    aw, bw = a.split(), b.split()
    if f" {a} " in f" {b} ":          # "Ana" in "Ana Rodriguez", "Life" in "Life category"
        return 0.8 * len(aw) / len(bw) + 0.2 if len(aw) < len(bw) else 0.9
    if f" {b} " in f" {a} ":          # "Pixel Sounds" of "Pixel Sounds Copycat"
        return 0.6 * len(bw) / len(aw)
    common = len(set(aw) & set(bw))
    return 0.5 * common / max(len(aw), len(bw)) if common else 0.0


def split_name(name: str) -> tuple[str, str]:
    """(first, last) of a person's name: the last word is the last name."""
    words = name.split()
    if len(words) < 2:
        return name, ""
    return " ".join(words[:-1]), words[-1]
