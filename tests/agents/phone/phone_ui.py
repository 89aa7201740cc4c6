"""Driving the virtual phone the way a UI agent does: read the dump, find an element by its text or
content-desc, tap the centre of its bounds; scroll the list when it is not on screen."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from agents.phone import NotIdle

BOUNDS = re.compile(r"^\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]$")


def dump(phone) -> ET.Element:
    for _ in range(5):
        try:
            return ET.fromstring(phone.dump_ui().encode("utf-8"))
        except NotIdle:
            continue
    raise AssertionError("the screen never settled")


def bounds(node: ET.Element) -> tuple[int, int, int, int]:
    m = BOUNDS.match(node.get("bounds", ""))
    assert m, node.get("bounds")
    return tuple(int(v) for v in m.groups())  # type: ignore[return-value]


def centre(node: ET.Element) -> tuple[int, int]:
    left, top, right, bottom = bounds(node)
    return (left + right) // 2, (top + bottom) // 2


def nodes(root: ET.Element) -> list[ET.Element]:
    return list(root.iter("node"))


def find(phone, label: str, exact: bool = True) -> ET.Element | None:
    for node in nodes(dump(phone)):
        for value in (node.get("text", ""), node.get("content-desc", "")):
            if value == label or (not exact and label.lower() in value.lower()):
                return node
    return None


def texts(phone) -> list[str]:
    return [n.get("text") for n in nodes(dump(phone)) if n.get("text")]


def scroll(phone, up: bool = True) -> None:
    """One swipe on the main list: up = later items."""
    scrollers = [n for n in nodes(dump(phone)) if n.get("scrollable") == "true"]
    assert scrollers, "nothing scrolls here"
    left, top, right, bottom = bounds(scrollers[-1])
    x, y1, y2 = (left + right) // 2, bottom - 100, top + 100
    if up:
        phone.swipe(x, y1, x, max(y2, y1 - 900), 300)
    else:
        phone.swipe(x, y2, x, min(y1, y2 + 900), 300)


def tap(phone, label: str, exact: bool = True, max_scrolls: int = 12) -> None:
    """Tap the element showing ``label``, scrolling down to it if needed (then back up)."""
    for _ in range(max_scrolls + 1):
        node = find(phone, label, exact)
        if node is not None:
            phone.tap(*centre(node))
            return
        before = phone.dump_ui()
        scroll(phone)
        if phone.dump_ui() == before:
            break
    raise AssertionError(f"no element {label!r} on screen: {texts(phone)}")
