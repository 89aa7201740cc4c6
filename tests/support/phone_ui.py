"""Driving the virtual phone the way a UI agent does: read the dump, find an element by its text or
content-desc, tap the centre of its bounds; scroll the list when it is not on screen."""
from __future__ import annotations

import re
from pathlib import Path
import xml.etree.ElementTree as ET

from agents.phone import NotIdle
from agents.phone.device.checks import Task, load_tasks
from agents.phone.device.phone import VirtualPhone

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


def long_press(phone, label: str) -> None:
    node = find(phone, label)
    assert node is not None, texts(phone)
    x, y = centre(node)
    phone.swipe(x, y, x, y, 800)  # how adb long-presses: a swipe that does not move


def solve(phone, steps: list, more: dict | None = None) -> None:
    """Play a task's solution as a user would: a label is a tap on it (scrolling to it),
    ``("type", text)``, ``("key", name)``, ``("long", label)``; ``more`` adds step kinds an app's
    tests need (name -> function(phone, *args))."""
    kinds = {"type": lambda p, text: p.type_text(text),
             "key": lambda p, name: _pressed(p.key(name), name),
             "long": long_press, **(more or {})}
    for step in steps:
        if isinstance(step, str):
            tap(phone, step)
        elif step[0] in kinds:
            kinds[step[0]](phone, *step[1:])
        else:
            raise ValueError(f"unknown solution step {step!r}")


def open_app(label: str) -> VirtualPhone:
    """A fresh phone with the app of that launcher label open."""
    phone = VirtualPhone()
    tap(phone, label)
    return phone


def screen(phone) -> str:
    return phone.state()["foreground"]["screen"]


def tasks_by_id(path: Path) -> dict[str, Task]:
    return {t.id: t for t in load_tasks(path)}


def played(task: Task, steps: list) -> dict:
    """The state after ``steps`` (as ``solve`` plays them) from the task's start."""
    phone = VirtualPhone(overrides=task.setup)
    solve(phone, steps)
    return phone.state()


def _pressed(known: bool, name: str) -> None:
    assert known, f"the phone does not know key {name}"


def dev_instructions(app: str) -> list[str]:
    """The dev set's instructions for ``app`` (the shared bench folder beside the repository);
    the test skips where that folder is not there."""
    import json

    import pytest

    bench = Path(__file__).resolve().parents[3] / "shared" / "bench" / "ui_tasks_dev.jsonl"
    if not bench.exists():
        pytest.skip(f"no shared bench at {bench}")
    rows = [json.loads(line) for line in bench.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["instruction"] for r in rows if r["app"] == app]
