"""How much a screen element has to do with a task: the meaning of its description (MiniLM
cosine, from the memory's embedding cache), the task's rarer words it shares (IDF-weighted, with
a crude stem and a few UI synonyms), and the task's slots it shows."""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Callable, Iterable, Sequence

from .slots import STOP, WORD, Slot, TaskInfo, norm, slot_match

Vectors = Callable[[list[str]], Sequence[Sequence[float]]]

# the words apps use for the same thing (generic UI vocabulary, not any one task's)
SYNONYMS = [
    {"delete", "remove", "trash", "discard", "erase"},
    {"stop", "pause"},
    {"resume", "start", "continue", "play"},
    {"favorite", "favourite", "star", "starred"},
    {"text", "message", "sms", "chat", "conversation"},
    {"enable", "turn", "activate", "use"},
    {"photo", "picture", "image"},
    {"ringtone", "sound", "tone"},
    {"wifi", "wi-fi", "internet", "network"},
    {"font", "text"},
    {"add", "new", "create", "plus"},
    {"change", "edit", "modify", "update", "set"},
    {"search", "find"},
    {"label", "tag", "name"},
    {"label", "group"},
    {"connect", "pair", "join"},
    {"vibrate", "vibration"},
    {"unblock", "unblocked"},
    {"language", "languages", "locale"},
    {"timeout", "sleep"},
    {"phone", "mobile", "number"},
    {"mute", "unmute", "silence", "notifications"},      # (unmuting is turning notifications on)
    {"bigger", "larger", "increase", "larger"},
    {"smaller", "decrease"},
    {"view", "see", "show", "open", "check"},
    {"cancel", "delete", "reset"},
    {"city", "cities", "time zone"},
]


def stem(word: str) -> str:
    word = word.lower().replace("\u2011", "-")
    return word[:5] if len(word) >= 5 else word


_SYN: dict[str, set[str]] = {}
for group in SYNONYMS:
    for w in group:
        _SYN.setdefault(stem(w), set()).update(stem(x) for x in group)


VAGUE = {stem(w) for w in ("set", "make", "turn", "change", "put", "get", "go", "open", "use",
                           "let", "have", "do", "please", "can", "could", "would", "i", "need", "want",
                           # to look at something is to reach its screen, not to press a button
                           "check", "view", "see", "show", "look", "find", "display")}


def synonyms(w: str) -> set[str]:
    """The stems apps use for the same thing as stem ``w`` (itself included when it has any)."""
    return _SYN.get(w, set())


def word_match(w: str, have: set[str]) -> float:
    if w in have:
        return 1.0
    if _SYN.get(w, set()) & have or undo(w) in have or w in {undo(x) for x in have} \
            or _SYN.get(undo(w), set()) & have:      # ("unstar": "Remove from favorites")
        return 0.5
    return 0.0


def undo(word: str) -> str:
    """"unpin" -> "pin" (a toggle's other state); other words unchanged."""
    return word[2:] if word.startswith("un") and len(word) >= 4 else word


def words_of(*texts: str) -> set[str]:
    out: set[str] = set()
    for text in texts:
        text = (text or "").lower().replace("\u2011", "-").replace("\u2010", "-")
        out |= {stem(w) for w in WORD.findall(text) if w not in STOP}
    return out


class Relevance:
    def __init__(self, task: TaskInfo, vectors: Vectors | None, corpus: Iterable[str] = ()):
        self.task = task
        self.vectors = vectors
        df = Counter()
        n = 0
        for text in corpus:
            n += 1
            df.update(words_of(text))
        self.n = max(n, 1)
        self.df = df
        self.words = [stem(w) for w in task.words]
        # the task's first word is its verb ("Pin the conversation…"): the action to find
        first = WORD.findall(task.text.lower())[:1]
        self.verb = stem(first[0]) if first and stem(first[0]) in self.words else ""
        self._task_vec = None
        self._memo: dict[str, float] = {}

    def forget(self, *texts: str) -> None:
        """Leave these words out of the task's (an app named in it: "in Google Clock" is no
        reason to tap "Switch to clock mode")."""
        drop = words_of(*texts)
        self.words = [w for w in self.words if w not in drop]

    @staticmethod
    def words_of_label(label: str) -> set[str]:
        return words_of(label)

    def idf(self, w: str) -> float:
        return math.log(1 + self.n / (1 + self.df.get(w, 0)))

    def lexical(self, *texts: str, verb: bool = True) -> float:
        """Share of the task's words (IDF-weighted) that the texts say, a synonym or the
        opposite action ("Unpin" for "pin": the same button in its other state) counting half;
        ``verb=False`` leaves the task's verb out (``verb_hit`` scores it)."""
        have = words_of(*texts)
        words = [w for w in self.words if verb or w != self.verb]
        total = sum(self.idf(w) for w in words) or 1.0
        return sum(self.idf(w) * word_match(w, have) for w in words) / total

    def verb_hit(self, *texts: str) -> float:
        """1 when the texts say the task's verb ("Pin", "Delete"), 0.5 for a synonym or its
        opposite ("Unpin"), 0 otherwise (and for a verb as vague as "set" or "make")."""
        if not self.verb or self.verb in VAGUE:
            return 0.0
        return word_match(self.verb, words_of(*texts))

    def lexical_in(self, vocabulary: set[str]) -> float:
        """``lexical`` against a set of stemmed words (an app's whole vocabulary)."""
        total = sum(self.idf(w) for w in self.words) or 1.0
        got = sum(self.idf(w) if w in vocabulary else 0.5 * self.idf(w) if _SYN.get(w, set()) & vocabulary else 0.0
                  for w in self.words)
        return got / total

    def semantic(self, texts: list[str]) -> list[float]:
        """Cosine of each text with the task (0 without an embedder)."""
        if self.vectors is None or not texts:
            return [0.0] * len(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            vecs = self.vectors([self.task.text] + todo) if self._task_vec is None else \
                [self._task_vec] + list(self.vectors(todo))
            self._task_vec = vecs[0]
            for t, v in zip(todo, vecs[1:]):
                self._memo[t] = _cos(self._task_vec, v)
        return [self._memo[t] for t in texts]

    def slot_hits(self, label: str, slots: Sequence[Slot]) -> tuple[float, Slot | None]:
        """The best slot ``label`` shows, and how well."""
        best, which = 0.0, None
        for s in slots:
            m = slot_match(s, label)
            if m > best:
                best, which = m, s
        return best, which


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def same_text(a: str, b: str) -> bool:
    return norm(a) == norm(b)


def mentions(text: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text, re.I) is not None
