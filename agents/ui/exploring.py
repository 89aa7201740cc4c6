"""What exploration may not do on a real phone, and how it tells what an action did: the words of
commits (delete, send, save, a dialog's confirming button…) and of changes people do not want
made for them (archive, mute…); the element an action left in place, the texts that changed."""
from __future__ import annotations

import re

from .graph import UIElement, element_key
from .safety import SENSITIVE
from .screen import Element, Screen

# reversible but unwelcome on someone's phone: an explorer leaves them alone too
AVOID = re.compile(r"\b(archive|unarchive|mute|unmute|discard|clear|sign out|log ?out|"
                   r"mark all|empty|restart|shut ?down|power off|erase|lock now|emergency|sos)\b", re.I)
POSITIVE = re.compile(r"^(ok|save|done|apply|confirm|set|add|create|yes|allow|continue|next|"
                      r"submit|finish|accept|update|rename|join|connect|pair|install|start)$", re.I)
NEGATIVE = re.compile(r"^(cancel|no|not now|dismiss|close|never|deny|don.t allow|skip|later|navigate up)$", re.I)
NUMBER = re.compile(r"^\d{1,2}$")


def unsafe(el: UIElement | Element, kind: str, on_form: bool) -> str:
    """Why an explorer must not take this element ("" when it may)."""
    label = el.label if isinstance(el, UIElement) else el.label
    words = " ".join([label, getattr(el, "detail", "") or getattr(el, "desc", "")])
    m = SENSITIVE.search(words) or AVOID.search(words)
    if m:
        return f"{m[0].lower()}"
    key = el.key if isinstance(el, UIElement) else element_key(el)
    name = label.strip().lower()
    if kind != "screen" and (key == "button1" or POSITIVE.match(name)):
        return "confirms"
    if on_form and POSITIVE.match(name):
        return "commits the form"
    return ""


def same_element(after: Screen, e: Element) -> Element | None:
    """``e`` on the screen after an action: at the same place with the same id/class."""
    for x in after.elements:
        if x.bounds == e.bounds and x.rid == e.rid and x.cls == e.cls:
            return x
    return None


def labels_of(screen: Screen) -> list[str]:
    return [e.label for e in screen.elements]


def changes(before: Screen, after: Screen) -> list[str]:
    """The texts that appeared or changed (a display showing a digit typed on a keypad)."""
    a = [(e.label, e.checked) for e in before.elements] + [(t, False) for t in before.texts]
    b = [(e.label, e.checked) for e in after.elements] + [(t, False) for t in after.texts]
    return [label for label, _ in b if (label, _) not in a]
