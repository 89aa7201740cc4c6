"""A phone screen as the agent sees it: the elements a user could act on, from uiautomator XML.

uiautomator describes every view; a user sees far fewer things: a Settings row is one tappable
thing even though it is a LinearLayout (clickable, no text) around a title, a summary and a
Switch (checkable but not clickable). So a clickable node takes the texts and the checked state
of the plain nodes inside it, and a node inside a clickable one is not listed on its own.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
EDITABLE_CLASSES = ("EditText", "AutoCompleteTextView", "SearchView")
MAX_LABEL = 80


class ScreenError(Exception):
    """The dump is not a uiautomator hierarchy."""


@dataclass
class Element:
    text: str = ""              # the node's own text, else the texts inside it
    desc: str = ""              # content-desc
    rid: str = ""               # resource id without its package ("title", "switch_widget")
    cls: str = ""               # class without its package ("Switch", "TextView")
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)
    clickable: bool = False
    long_clickable: bool = False
    editable: bool = False
    checkable: bool = False
    checked: bool = False
    scrollable: bool = False
    password: bool = False
    selected: bool = False
    details: list[str] = field(default_factory=list)   # texts inside it after the first
    owner: int = -1             # the actionable element it sits in (a list row, a card), or -1
    in_list: bool = False       # inside a scrolling container (a list row or what a row holds)
    texts: list[str] = field(default_factory=list)     # every text in its subtree, nested elements' too
    check_cls: str = ""         # the class of what shows its checked state (Switch, RadioButton, …)
    row: bool = False           # one of a list's like rows (or inside one): its label is data

    @property
    def center(self) -> tuple[int, int]:
        x1, y1, x2, y2 = self.bounds
        return (x1 + x2) // 2, (y1 + y2) // 2

    @property
    def label(self) -> str:
        """What a person would call it: its text, else its description, else its id."""
        name = self.text or self.desc or self.rid.replace("_", " ")
        return _cut(name) or self.cls

    @property
    def actionable(self) -> bool:
        return self.clickable or self.long_clickable or self.editable or self.checkable

    def describe(self) -> str:
        """One compact line: label, what is inside it, its state and kind."""
        parts = [f'"{self.label}"']
        extra = [d for d in self.details if d and d != self.label][:2]
        if self.desc and self.text and self.desc != self.text:
            extra.insert(0, self.desc)
        if extra:
            parts.append("(" + "; ".join(_cut(e, 40) for e in extra) + ")")
        kind = ("password field" if self.password else "text field" if self.editable else
                "switch" if self.checkable else "button" if self.clickable else "item")
        if self.checkable:
            kind += " on" if self.checked else " off"
        if self.selected:
            kind += " selected"
        parts.append(f"[{kind}]")
        return " ".join(parts)


@dataclass
class Screen:
    elements: list[Element]           # actionable, in reading order (top to bottom, left to right)
    texts: list[str]                   # visible text not inside any actionable element
    scrollable: list[Element]          # scrolling containers, largest first
    package: str = ""
    activity: str = ""
    size: tuple[int, int] = (1080, 2400)
    xml: str = ""
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)   # the window's (its root node's)
    boxes: list[tuple[str, tuple[int, int, int, int]]] = field(default_factory=list)  # texts with bounds

    @property
    def title(self) -> str:
        return self.texts[0] if self.texts else ""

    @property
    def kind(self) -> str:
        """What window is in front, from its bounds as ``uiautomator`` reports them (a real phone
        dumps the focused window only): ``screen`` (full width, most of the height), ``menu`` (a
        popup at the top right), ``sheet`` (full width, anchored at the bottom) or ``dialog``."""
        x1, y1, x2, y2 = self.bounds
        w, h = self.size
        if x2 <= x1 or (x2 - x1 >= w * 0.95 and y2 - y1 >= h * 0.8):
            return "screen"
        if x2 >= w * 0.95 and x1 > w * 0.25 and y1 < h * 0.25:
            return "menu"
        if x2 - x1 >= w * 0.95 and y2 >= h * 0.9:
            return "sheet"
        return "dialog"

    def signature(self) -> str:
        """Same screen, same signature: the app, the activity and what is on it."""
        return "|".join([self.package, self.activity] + [e.describe() for e in self.elements])

    def row_of(self, e: Element) -> Element:
        """The outermost actionable element ``e`` sits in (itself when it sits in none)."""
        while e.owner >= 0:
            e = self.elements[e.owner]
        return e

    def row_texts(self, e: Element) -> list[str]:
        """What identifies the list row ``e`` is in: the texts of everything in its row. Rows
        are cut at the repeated element that comes first in each row (an alarm's expand arrow),
        so an expanded alarm, whose card is no longer one element, still reads as one row."""
        groups: dict[str, list[Element]] = {}
        for x in self.elements:
            if x.row and _row_key(x):
                groups.setdefault(_row_key(x), []).append(x)
        groups = {k: v for k, v in groups.items() if len(v) > 1}
        if not groups:
            return list(self.row_of(e).texts)
        anchors = min(groups.values(), key=lambda v: min(x.bounds[1] for x in v))
        tops = sorted(x.bounds[1] for x in anchors)
        cy = (e.bounds[1] + e.bounds[3]) / 2

        def band(y: float) -> int:
            return sum(1 for t in tops if t <= y) - 1

        mine = band(cy)
        if mine < 0:
            return list(self.row_of(e).texts)
        out = list(self.row_of(e).texts)
        for x in self.elements:
            if x is not e and band((x.bounds[1] + x.bounds[3]) / 2) == mine:
                out += x.texts[:3]
        # plain texts in the row's band (a blocked number beside its Unblock button)
        out += [t for t, b in self.boxes if b[1] >= tops[0] and band((b[1] + b[3]) / 2) == mine]
        return out

def parse_dump(xml: str, size: tuple[int, int] = (1080, 2400)) -> Screen:
    """The screen a ``uiautomator dump`` describes. ``ScreenError`` when it is not one."""
    start = xml.find("<?xml")
    if start < 0:
        start = xml.find("<hierarchy")
    if start < 0:
        raise ScreenError("no uiautomator hierarchy in the dump")
    end = xml.rfind("</hierarchy>")
    text = xml[start:end + len("</hierarchy>")] if end >= 0 else xml[start:]
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as exc:
        raise ScreenError(f"unreadable uiautomator dump ({exc})") from None
    if root.tag != "hierarchy":
        raise ScreenError(f"unexpected root <{root.tag}> in the dump")
    screen = Screen([], [], [], size=size, xml=text)
    package = ""
    owners: dict[int, Element] = {}
    for node in root:
        package = package or node.get("package", "")
        if screen.bounds == (0, 0, 0, 0):
            screen.bounds = _bounds(node.get("bounds", ""))
        _walk(node, screen, None, owners, False)
    screen.package = package
    screen.elements.sort(key=lambda e: (e.bounds[1], e.bounds[0]))
    index = {id(e): i for i, e in enumerate(screen.elements)}
    for e in screen.elements:
        o = owners.get(id(e))
        e.owner = index.get(id(o), -1) if o is not None else -1
    _mark_rows(screen)
    screen.scrollable.sort(key=lambda e: _area(e.bounds), reverse=True)
    return screen


def _mark_rows(screen: Screen) -> None:
    """Rows of a list: elements sharing a resource id, the elements holding them (an alarm's
    card holds its switch and its time) and everything inside those."""
    count: dict[str, int] = {}
    for e in screen.elements:
        if _row_key(e):
            count[_row_key(e)] = count.get(_row_key(e), 0) + 1
    for e in screen.elements:
        if _row_key(e) and count[_row_key(e)] > 1:
            e.row = True
            o = e.owner
            while o >= 0:
                screen.elements[o].row = True
                o = screen.elements[o].owner
    for e in screen.elements:
        o = e.owner
        while o >= 0 and not e.row:
            e.row = screen.elements[o].row
            o = screen.elements[o].owner


def _row_key(e: Element) -> str:
    """What like rows share: their resource id, or else their class and wording (the Unblock
    button beside each blocked number has no id)."""
    if e.rid:
        return e.rid
    return f"{e.cls}:{e.desc or e.text}" if (e.desc or e.text) and not e.editable else ""


def _walk(node: ET.Element, screen: Screen, owner: Element | None, owners: dict[int, Element],
          in_list: bool) -> None:
    bounds = _bounds(node.get("bounds", ""))
    visible = bounds[2] > bounds[0] and bounds[3] > bounds[1]
    cls = node.get("class", "").rpartition(".")[2]
    text = _clean(node.get("text", ""))
    desc = _clean(node.get("content-desc", ""))
    on = (lambda name: node.get(name) == "true")
    editable = cls in EDITABLE_CLASSES or (cls.endswith("EditText"))
    own = None
    if visible and on("scrollable"):
        screen.scrollable.append(Element(cls=cls, bounds=bounds, scrollable=True,
                                         rid=_rid(node), desc=desc))
    if visible and owner is not None and (text or desc):
        o = owner
        while o is not None:        # every enclosing element knows the texts inside it
            o.texts.append(_cut(text or desc))
            o = owners.get(id(o))
    takes_input = on("clickable") or on("long-clickable") or editable
    if visible and takes_input and (owner is None or editable or on("clickable")):
        own = Element(text=text, desc=desc, rid=_rid(node), cls=cls, bounds=bounds,
                      clickable=on("clickable"), long_clickable=on("long-clickable"),
                      editable=editable and on("enabled"), checkable=on("checkable"),
                      checked=on("checked"), password=on("password"), selected=on("selected"),
                      in_list=in_list, texts=[_cut(t) for t in (text, desc) if t],
                      check_cls=cls if on("checkable") else "")
        if not on("enabled"):
            own = None        # greyed out: nothing happens when it is tapped
        else:
            screen.elements.append(own)
            if owner is not None:
                owners[id(own)] = owner
    elif visible and owner is not None:
        # a plain node inside an actionable one describes it
        if text:
            if owner.text:
                owner.details.append(text)
            else:
                owner.text = text
        elif desc and not owner.desc:
            owner.desc = desc
        if on("checkable"):
            owner.checkable, owner.checked, owner.check_cls = True, on("checked"), cls
    elif visible and owner is None and (text or desc) and on("enabled"):
        if on("checkable"):    # a lone switch a user can still flip
            screen.elements.append(Element(text=text, desc=desc, rid=_rid(node), cls=cls,
                                           bounds=bounds, checkable=True, checked=on("checked"),
                                           clickable=True, in_list=in_list,
                                           texts=[_cut(text or desc)], check_cls=cls))
        else:
            screen.texts.append(_cut(text or desc))
            screen.boxes.append((_cut(text or desc), bounds))
    in_list = in_list or (visible and on("scrollable"))
    for child in node:
        _walk(child, screen, own or owner, owners, in_list)


def _bounds(text: str) -> tuple[int, int, int, int]:
    m = BOUNDS.fullmatch(text.strip())
    return tuple(int(v) for v in m.groups()) if m else (0, 0, 0, 0)  # type: ignore[return-value]


def _area(b: tuple[int, int, int, int]) -> int:
    return max(0, b[2] - b[0]) * max(0, b[3] - b[1])


def _rid(node: ET.Element) -> str:
    return node.get("resource-id", "").rpartition("/")[2]


def _clean(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, n: int = MAX_LABEL) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"
