"""A value shown between two step buttons ("Make smaller · 100% · Make larger", "− 5 +"): the
task names the value ("font size 150%", "display size Large"), so the button toward it is
tapped until the slider shows it. A SeekBar's position is not in the dump, but the text it shows
is, so each tap is checked on the next screen; a drag could only reach the ends."""
from __future__ import annotations

import re

from .screen import Element, Screen
from .goals import SCALE, comparative, on_scale
from .slots import slot_match
from .step import Step

INC = re.compile(r"\b(larger|bigger|increase|more|up|plus|raise|higher|louder|longer)\b|^\+$", re.I)
DEC = re.compile(r"\b(smaller|decrease|less|down|minus|lower|quieter|shorter)\b|^[-−]$", re.I)


def _number(text: str) -> float | None:
    m = re.fullmatch(r"\s*(\d+(?:[.,]\d+)?)\s*%?\s*(?:\w+)?\s*", text)
    return float(m.group(1).replace(",", ".")) if m else None


def direction(now: str, want: str) -> int:
    """+1 when ``want`` lies above ``now``, -1 below, 0 when unknown or equal."""
    a, b = _number(now), _number(want)
    if a is not None and b is not None:
        return (b > a) - (b < a)
    x, y = now.strip().lower(), want.strip().lower()
    if x in SCALE and y in SCALE:
        return (SCALE.index(y) > SCALE.index(x)) - (SCALE.index(y) < SCALE.index(x))
    return 0


def _alike(now: str, want: str) -> bool:
    """Both numbers or both words: which of several sliders shows values of the wanted kind."""
    return (_number(now) is None) == (_number(want) is None)


def toward(screen: Screen, sliders: list[Element], want: str, task, rel, tried: dict) -> Step | None:
    """The step that brings the slider the task means to ``want``: done when it shows it, else
    the step button on its line toward it. ``tried`` remembers, per slider, the value before the
    last tap and the direction taken (a scale it cannot order is walked up, then down)."""
    # the value the task names: the goal's option, or a step of the slider's kind of scale
    # ("Small" though exploration never saw the slider at Small)
    want = next((s.text for s in task.slots if on_scale(s, [e.label for e in sliders])), want)
    named = any(slot_match(s, want) >= 0.8 for s in task.slots)
    more = comparative(task.text)
    if not named and not more:
        return None                      # the task names no value (a volume "all the way up")
    el = max(sliders, key=lambda e: (rel.lexical(e.desc, *e.texts[1:3]), _alike(e.label, want)))
    if not named:                        # one step that way ("make the text bigger")
        return _button(screen, el, more, finishes=True)
    if el.label.strip().lower() == want.strip().lower():
        return Step("done", el, why=f"{el.desc or 'it'} shows {want}", finishes=True)
    way = direction(el.label, want)
    key = el.desc or str(el.bounds)
    if way == 0:                        # a scale it cannot order: up until it stops moving, then down
        last = tried.get(key)
        way = 1 if last is None else (last[1] if last[0] != el.label else -last[1])
    tried[key] = (el.label, way)
    return _button(screen, el, way, why=f"{el.desc or 'it'} shows {el.label}, the task wants {want}")


def _button(screen: Screen, el: Element, way: int, finishes: bool = False, why: str = "") -> Step | None:
    """The step button on the slider's line that moves it ``way`` (+1 up, -1 down)."""
    line = [e for e in screen.elements if e is not el and e.clickable and e.bounds[1] <= el.center[1] <= e.bounds[3]]
    button = next((e for e in line if (INC if way > 0 else DEC).search(e.label)), None)
    if button is None:
        return None
    return Step("tap", button, finishes=finishes, why=f"{button.label}: {why or (el.desc or 'it') + ' one step'}")
