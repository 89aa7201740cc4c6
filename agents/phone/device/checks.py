"""Task checks: a small JSON predicate language over ``VirtualPhone.state()``, and the task loader.

Predicates (no code is ever evaluated):
- ``{"all": [p, …]}``, ``{"any": [p, …]}``, ``{"not": p}``
- ``{"eq": [path, value]}``, ``{"ne": …}``, ``{"gt": …}``, ``{"ge": …}``, ``{"lt": …}``, ``{"le": …}``
  (the value at ``path`` against a literal; ordering of a missing value is false)
- ``{"in": [path, value]}``: the list/dict/string at ``path`` contains ``value``
- ``{"contains": [path, text]}``: case-insensitive substring (the search filters of app lists); on
  a list or dict, of any text inside it (a conversation's messages)
- ``{"some": [path, p]}``: some element of the list at ``path`` satisfies ``p`` (it is ``item`` there)
- ``{"truthy": path}``, ``{"visited": screen_id}``: a screen (``app:screen``) was shown
- ``{"foreground": screen_id}``: that screen is in front now
Paths are dotted (``settings.wallpaper.home``, ``clock.alarms[0].label``), see ``paths``.
"""
from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .paths import get

_ORDER = {"gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le}
_BINARY = {"eq", "ne", "in", "contains", *_ORDER}
OPS = {"all", "any", "not", "some", "truthy", "visited", "foreground", *_BINARY}


def check(predicate: Any, state: Any) -> bool:
    """Whether ``predicate`` holds on ``state``; ValueError when the predicate is malformed."""
    if not isinstance(predicate, dict) or len(predicate) != 1:
        raise ValueError(f"a predicate is an object with exactly one operator, got {_short(predicate)}")
    (op, arg), = predicate.items()
    if op not in OPS:
        raise ValueError(f"unknown operator {op!r} (known: {', '.join(sorted(OPS))})")
    if op in ("all", "any"):
        if not isinstance(arg, list):
            raise ValueError(f"{op!r} takes a list of predicates, got {_short(arg)}")
        results = [check(p, state) for p in arg]  # every branch validated, not short-circuited
        return all(results) if op == "all" else any(results)
    if op == "some":
        # {"some": [path, p]}: an element of the list at path satisfies p, read as ``item``
        if not (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[0], str)):
            raise ValueError(f"'some' takes [path, predicate], got {_short(arg)}")
        check(arg[1], {})  # validated even when the list is empty
        items = get(state, arg[0])
        return any(check(arg[1], dict(state, item=it)) for it in (items if isinstance(items, list) else []))
    if op == "not":
        return not check(arg, state)
    if op in ("truthy", "visited", "foreground"):
        if not isinstance(arg, str):
            raise ValueError(f"{op!r} takes a string, got {_short(arg)}")
        if op == "truthy":
            return bool(get(state, arg))
        if op == "visited":
            return arg in (get(state, "visited") or [])
        return get(state, "foreground.screen") == arg
    if not (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[0], str)):
        raise ValueError(f"{op!r} takes [path, value], got {_short(arg)}")
    value, literal = get(state, arg[0]), arg[1]
    if op == "eq":
        return value == literal
    if op == "ne":
        return value != literal
    if op == "in":
        if isinstance(value, str):
            return isinstance(literal, str) and literal in value
        return isinstance(value, (list, dict)) and literal in value
    if op == "contains":
        if literal is None or _fold(literal) == "":
            return True
        texts = _texts(value) if isinstance(value, (list, dict)) else ["" if value is None else value]
        return any(_fold(literal) in _fold(text) for text in texts)
    try:
        return value is not None and bool(_ORDER[op](value, literal))
    except TypeError:
        return False


def _fold(text: Any) -> str:
    # what a search box matches: case-insensitive, and "Wi-Fi" finds Settings' "Wi\u2011Fi"
    return str(text).lower().replace("\u2011", "-").replace("\u2010", "-")


def _texts(value: Any):
    """The texts inside a list/dict (values, not keys; flags left out): what a search looks at."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            yield from _texts(v)
    elif value is not None and not isinstance(value, bool):
        yield value


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class Task:
    """One instruction for the UI agent, the state to start from, and how to tell it is done."""
    app: str
    instruction: str
    check: dict
    setup: dict = field(default_factory=dict)  # dotted path -> value, applied to the fresh state
    id: str = ""

    def passed(self, state: dict) -> bool:
        return check(self.check, state)


def parse_task(line: str, where: str = "task") -> Task:
    """One JSONL line as a Task; ValueError with a one-line message naming ``where``."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = set(data) - {"app", "instruction", "check", "setup", "id"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("app", "instruction"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ValueError(f"{where}: {key!r} must be a non-empty string")
    if "check" not in data:
        raise ValueError(f"{where}: missing 'check'")
    setup = data.get("setup", {})
    if not isinstance(setup, dict):
        raise ValueError(f"{where}: 'setup' must be an object of path -> value")
    try:
        check(data["check"], {})  # validates the whole tree on an empty state
    except ValueError as e:
        raise ValueError(f"{where}: bad check: {e}") from None
    return Task(app=data["app"], instruction=data["instruction"], check=data["check"],
                setup=setup, id=str(data.get("id", "")))


def load_tasks(path: str | Path) -> list[Task]:
    """Tasks of a JSONL file (blank lines skipped); ValueError naming the file and line."""
    path = Path(path)
    tasks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            tasks.append(parse_task(line, f"{path.name}:{number}"))
    return tasks
