"""The view tree of one window and its rendering as ``uiautomator dump`` XML.

A ``Node`` carries the attributes uiautomator prints plus what the device needs to react to input
(``tap``/``long_tap`` action lists, the scroll key of a scrollable container, the state path an
EditText edits). Attribute order, quoting and the ``index`` numbering follow the real dump.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator
from xml.sax.saxutils import escape

_ENTITIES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}

Bounds = tuple[int, int, int, int]  # left, top, right, bottom

_FLAGS = ("checkable", "checked", "clickable", "enabled", "focusable", "focused", "scrollable",
          "long_clickable", "password", "selected")


@dataclass
class Node:
    cls: str
    bounds: Bounds = (0, 0, 0, 0)
    rid: str = ""
    text: str = ""
    desc: str = ""
    package: str = ""
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    long_clickable: bool = False
    password: bool = False
    selected: bool = False
    children: list["Node"] = field(default_factory=list)
    # behaviour, never printed
    tap: list | None = None
    long_tap: list | None = None
    swipe: list | None = None    # actions of a horizontal swipe across it (swipe-to-dismiss)
    ctx: Any = None              # the template context the actions run in (list item, args…)
    scroll: str | None = None    # key of this container's offset in the frame
    max_scroll: int = 0
    edit: str | None = None      # state path an EditText writes
    submit: list | None = None   # actions on ENTER in this EditText
    slider: dict | None = None   # {"bind", "min", "max"} of a SeekBar

    def add(self, *nodes: "Node") -> "Node":
        self.children.extend(n for n in nodes if n is not None)
        return self

    def walk(self) -> Iterator["Node"]:
        yield self
        for child in self.children:
            yield from child.walk()


def shift(node: Node, dy: int) -> None:
    """Move a subtree vertically (list items are built at y=0, then placed)."""
    for n in node.walk():
        left, top, right, bottom = n.bounds
        n.bounds = (left, top + dy, right, bottom + dy)


def clip(node: Node, box: Bounds) -> Node | None:
    """The subtree as uiautomator reports it inside ``box``: bounds clipped to the visible part,
    children wholly outside dropped (a RecyclerView has no views for them), None if invisible."""
    left, top, right, bottom = node.bounds
    cl, ct, cr, cb = max(left, box[0]), max(top, box[1]), min(right, box[2]), min(bottom, box[3])
    if cl >= cr or ct >= cb:
        return None
    node.bounds = (cl, ct, cr, cb)
    node.children = [c for c in (clip(child, box) for child in node.children) if c is not None]
    return node


def to_xml(roots: list[Node], package_of: str = "") -> str:
    """The dump: one ``<node>`` per view, nested, with uiautomator's attribute order."""
    parts = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"]
    for index, root in enumerate(roots):
        _node_xml(root, index, package_of, parts)
    parts.append("</hierarchy>")
    return "".join(parts)


def _node_xml(node: Node, index: int, package: str, out: list[str]) -> None:
    pkg = node.package or package
    attrs: list[tuple[str, Any]] = [("index", index), ("text", _clean(node.text)), ("resource-id", node.rid),
                                    ("class", node.cls), ("package", pkg), ("content-desc", _clean(node.desc))]
    attrs += [(flag.replace("_", "-"), getattr(node, flag)) for flag in _FLAGS]
    left, top, right, bottom = node.bounds
    attrs.append(("bounds", f"[{left},{top}][{right},{bottom}]"))
    text = " ".join(f'{name}="{escape(_value(value), _ENTITIES)}"' for name, value in attrs)
    if not node.children:
        out.append(f"<node {text} />")
        return
    out.append(f"<node {text}>")
    for i, child in enumerate(node.children):
        _node_xml(child, i, pkg, out)
    out.append("</node>")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _clean(text: str) -> str:
    # XML 1.0 cannot carry most control characters; uiautomator drops them too
    return "".join(c for c in str(text) if c in "\t\n\r" or ord(c) >= 0x20)


def find(root: Node, x: int, y: int, want) -> Node | None:
    """The deepest node containing (x, y) for which ``want(node)`` holds (later siblings win:
    they are drawn on top)."""
    left, top, right, bottom = root.bounds
    if not (left <= x < right and top <= y < bottom):
        return None
    for child in reversed(root.children):
        hit = find(child, x, y, want)
        if hit is not None:
            return hit
    return root if want(root) else None
