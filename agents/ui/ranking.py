"""Ranking a screen's elements against the task with the memory's embedder.

A 135M model reads the first lines of a list best and cannot weigh forty of them: the elements
most like the task come first and a long screen is cut, but never an element the task names.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Sequence

from .screen import Element

Embed = Callable[[list[str]], Sequence[Sequence[float]]]
NAMED_BONUS = 1.0      # above any cosine gap: an element the task names ranks first
WORD = re.compile(r"[a-z0-9]+")


def named(task: str, element: Element) -> bool:
    """The task says this element's label (every word of it, in order)."""
    label = " ".join(WORD.findall(element.label.lower()))
    return bool(label) and f" {label} " in f" {' '.join(WORD.findall(task.lower()))} "


class Ranker:
    def __init__(self, embed: Embed | None):
        self.embed = embed
        self._cache: dict[str, Sequence[float]] = {}

    def _vectors(self, texts: list[str]) -> list[Sequence[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for text, vec in zip(todo, self.embed(todo)):
                self._cache[text] = vec
        return [self._cache[t] for t in texts]

    def scores(self, task: str, elements: list[Element]) -> list[float]:
        if self.embed is None or not elements:
            base = [0.0] * len(elements)
        else:
            texts = [" ".join([e.label] + e.details[:1]) for e in elements]
            q, *vs = self._vectors([task] + texts)
            base = [_cosine(q, v) for v in vs]
        return [b + (NAMED_BONUS if named(task, e) else 0.0) for b, e in zip(base, elements)]

    def rank(self, task: str, elements: list[Element], limit: int) -> list[Element]:
        """The elements best first (ties keep screen order), at most ``limit`` of them plus any
        the task names that would have been cut."""
        scores = self.scores(task, elements)
        order = sorted(range(len(elements)), key=lambda i: (-scores[i], i))
        keep = order[:limit] + [i for i in order[limit:] if named(task, elements[i])]
        return [elements[i] for i in keep]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0
