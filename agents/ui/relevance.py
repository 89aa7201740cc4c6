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
    {"label", "tag"},
    {"vibrate", "vibration"},
    {"unblock", "unblocked"},
    {"language", "languages", "locale"},
    {"timeout", "sleep"},
    {"rename", "name"},
    {"phone", "mobile", "number"},
    {"mute", "silence", "notifications"},
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
        self._task_vec = None
        self._memo: dict[str, float] = {}

    def idf(self, w: str) -> float:
        return math.log(1 + self.n / (1 + self.df.get(w, 0)))

    def lexical(self, *texts: str) -> float:
        """Share of the task's words (IDF-weighted) that the texts say, a synonym counting half."""
        have = words_of(*texts)
        total = sum(self.idf(w) for w in self.words) or 1.0
        got = 0.0
        for w in self.words:
            if w in have:
                got += self.idf(w)
            elif _SYN.get(w, set()) & have:
                got += 0.5 * self.idf(w)
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
