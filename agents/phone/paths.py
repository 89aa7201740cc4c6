"""Dotted paths into JSON-like data, and the ``{path}`` templates app definitions use.

A path is ``name(.name|[index])*``; an index is an integer or another path, so
``data.font_labels[settings.font_size.step]`` and ``clock.alarms[args.index].label`` both work;
``.length`` of a list or string is its length.
A template is any JSON value: strings have ``{path}`` parts replaced (a string that is exactly one
``{path}`` yields the raw value, so numbers and booleans survive), lists and dicts are rendered
item by item, and ``{"if": predicate, "then": a, "else": b}`` picks a branch.
"""
from __future__ import annotations

import re
from typing import Any, Callable

_MISSING = object()
_WHOLE = re.compile(r"^\{([^{}]+)\}$")
_PART = re.compile(r"\{([^{}]+)\}")


def _split(path: str) -> list[str | tuple[str]]:
    """Segments of a path: names as str, bracketed index expressions as 1-tuples."""
    out: list[str | tuple[str]] = []
    i, name = 0, ""
    while i < len(path):
        c = path[i]
        if c == ".":
            if name:
                out.append(name)
            name = ""
        elif c == "[":
            if name:
                out.append(name)
            name, depth, j = "", 1, i + 1
            while j < len(path) and depth:
                depth += {"[": 1, "]": -1}.get(path[j], 0)
                j += 1
            if depth:
                raise ValueError(f"unbalanced [ in path {path!r}")
            out.append((path[i + 1:j - 1],))
            i = j
            continue
        else:
            name += c
        i += 1
    if name:
        out.append(name)
    if not out:
        raise ValueError(f"empty path {path!r}")
    return out


def _key(seg: str | tuple[str], root: Any) -> Any:
    if isinstance(seg, str):
        return seg
    inner = seg[0].strip()
    if re.fullmatch(r"-?\d+", inner):
        return int(inner)
    return get(root, inner)


def get(root: Any, path: str, default: Any = None) -> Any:
    """The value at ``path`` (``default`` when any step is missing)."""
    cur = root
    for seg in _split(path):
        key = _key(seg, root)
        if key == "length" and isinstance(cur, (list, str)):
            cur = len(cur)  # ``settings.languages.length``
            continue
        try:
            if isinstance(cur, list) and isinstance(key, str) and key.lstrip("-").isdigit():
                key = int(key)
            cur = cur[key]
        except (KeyError, IndexError, TypeError):
            return default
    return cur


def put(root: dict, path: str, value: Any) -> None:
    """Set the value at ``path``, creating dicts on the way (lists must exist)."""
    segs = _split(path)
    cur = root
    for seg in segs[:-1]:
        key = _key(seg, root)
        if isinstance(cur, dict) and key not in cur:
            cur[key] = {}
        cur = cur[key]
    cur[_key(segs[-1], root)] = value


def has(root: Any, path: str) -> bool:
    return get(root, path, _MISSING) is not _MISSING


def render(value: Any, ctx: Any, check: Callable[[Any, Any], bool] | None = None) -> Any:
    """``value`` with its templates filled from ``ctx`` (see the module docstring).
    ``check`` evaluates ``{"if": …}`` predicates (given by the caller to keep this module leaf)."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole:
            return get(ctx, whole.group(1))
        if "{" not in value:
            return value
        return _PART.sub(lambda m: _text(get(ctx, m.group(1))), value)
    if isinstance(value, list):
        return [render(v, ctx, check) for v in value]
    if isinstance(value, dict):
        if "if" in value and "then" in value and check is not None:
            branch = value["then"] if check(render(value["if"], ctx, check), ctx) else value.get("else")
            return render(branch, ctx, check)
        return {k: render(v, ctx, check) for k, v in value.items()}
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def merge(base: dict, override: dict) -> dict:
    """Deep merge (``override`` wins); keys containing dots are paths."""
    for key, value in override.items():
        if "." in key or "[" in key:
            put(base, key, value)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base
