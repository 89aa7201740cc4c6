"""Dotted paths into JSON-like data, and the ``{path}`` templates app definitions use.

A path is ``name(.name|[index])*``; an index is an integer or another path, so
``data.font_labels[settings.font_size.step]`` and ``clock.alarms[args.index].label`` both work;
``.length`` of a list or string is its length. ``[key=path]`` selects the first element of a list
whose ``key`` equals the value at ``path`` (``[key='text']``: a literal), so screens can follow one
record by its id while the list around it is reordered: ``contacts.list[id=args.id].phone``.
A template is any JSON value: strings have ``{path}`` parts replaced (a string that is exactly one
``{path}`` yields the raw value, so numbers and booleans survive), lists and dicts are rendered
item by item, and ``{"if": predicate, "then": a, "else": b}`` picks a branch. ``{path|filter}``
formats the value with one of ``FILTERS`` (chainable: ``{local.hour|int|pad2}``). Three more
directives: ``{"use": path, "item": x}`` renders the template stored at ``path`` (a contact's name
in the chosen name format, written once in ``data``), ``{"count": path, "where": predicate}`` is
how many elements match, ``{"lines": [...], "each": path, "sep": s}`` is text built line by line.
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


_SELECT = re.compile(r"^([A-Za-z_]\w*)\s*=\s*(.+)$")


def _key(seg: str | tuple[str], root: Any, cur: Any = None) -> Any:
    if isinstance(seg, str):
        return seg
    inner = seg[0].strip()
    if re.fullmatch(r"-?\d+", inner):
        return int(inner)
    select = _SELECT.match(inner)
    if select:
        return _select(cur, select.group(1), select.group(2).strip(), root)
    return get(root, inner)


def _select(items: Any, field: str, want: str, root: Any) -> int | None:
    """Index of the first dict in ``items`` whose ``field`` equals ``want`` (a path, or 'quoted')."""
    if len(want) >= 2 and want[0] == want[-1] and want[0] in "'\"":
        value: Any = want[1:-1]
    else:
        value = get(root, want)
    for i, item in enumerate(items if isinstance(items, list) else []):
        # ids typed into templates come back as text: compare as text too
        if isinstance(item, dict) and field in item and (item[field] == value or str(item[field]) == str(value)):
            return i
    return None


def get(root: Any, path: str, default: Any = None) -> Any:
    """The value at ``path`` (``default`` when any step is missing)."""
    cur = root
    for seg in _split(path):
        key = _key(seg, root, cur)
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
        key = _key(seg, root, cur)
        if isinstance(cur, dict) and key not in cur:
            cur[key] = {}
        cur = cur[key]
    cur[_key(segs[-1], root, cur)] = value


def has(root: Any, path: str) -> bool:
    return get(root, path, _MISSING) is not _MISSING


def render(value: Any, ctx: Any, check: Callable[[Any, Any], bool] | None = None) -> Any:
    """``value`` with its templates filled from ``ctx`` (see the module docstring).
    ``check`` evaluates ``{"if": …}`` predicates (given by the caller to keep this module leaf)."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole:
            return _lookup(ctx, whole.group(1))
        if "{" not in value:
            return value
        return _PART.sub(lambda m: _text(_lookup(ctx, m.group(1))), value)
    if isinstance(value, list):
        return [render(v, ctx, check) for v in value]
    if isinstance(value, dict):
        if "if" in value and "then" in value and check is not None:
            branch = value["then"] if check(render(value["if"], ctx, check), ctx) else value.get("else")
            return render(branch, ctx, check)
        keys = set(value)
        if "use" in keys and keys <= {"use", "item"}:
            # a named template (one name format for every screen), optionally about another element
            inner = dict(ctx, item=render(value["item"], ctx, check)) if "item" in value else ctx
            return render(get(ctx, value["use"]), inner, check)
        if "count" in keys and keys <= {"count", "where"} and check is not None:
            return sum(1 for c in _items(ctx, value["count"])
                       if "where" not in value or check(render(value["where"], c, check), c))
        if "lines" in keys and keys <= {"lines", "each", "sep"}:
            return _lines(value, ctx, check)
        return {k: render(v, ctx, check) for k, v in value.items()}
    return value


def _items(ctx: Any, path: str) -> list[dict]:
    """The contexts of the elements of the list at ``path`` (as ``item``/``index``)."""
    source = get(ctx, path)
    return [dict(ctx, item=it, index=i) for i, it in enumerate(source if isinstance(source, list) else [])]


def _lines(value: dict, ctx: Any, check: Callable[[Any, Any], bool] | None) -> str:
    """Text made of lines (a file's contents): ``lines`` rendered once, or once per element of
    ``each``; a line that renders to null (an ``if`` without ``else``) is left out."""
    sep = value.get("sep", "\n")
    contexts = _items(ctx, value["each"]) if "each" in value else [ctx]
    out = [_text(line) for c in contexts for line in render(value["lines"], c, check) if line is not None]
    return "".join(line + sep for line in out)


def _lookup(ctx: Any, expr: str) -> Any:
    path, *filters = expr.split("|")
    value = get(ctx, path.strip())
    for name in filters:
        if name.strip() not in FILTERS:
            raise ValueError(f"unknown template filter {name.strip()!r} (known: {', '.join(sorted(FILTERS))})")
        value = FILTERS[name.strip()](value)
    return value


def _int(value: Any) -> int | None:
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None  # typed digits ("05") -> 5; anything else -> None


def _clock(seconds: Any, always_minutes: bool) -> str:
    # AOSP DeskClock's Utils.getTimeString: "1:05:00", "5:00", and a bare "5" for a timer's seconds
    total = _int(seconds) or 0
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}" if m or always_minutes else str(s)


def _hms(digits: Any) -> int:
    # a timer keypad's "HHMMSS" digits -> seconds ("000130" is 90; "9999" minutes/seconds overflow too)
    text = str(digits or "").rjust(6, "0")[-6:]
    return int(text[:2]) * 3600 + int(text[2:4]) * 60 + int(text[4:]) if text.isdigit() else 0


def _vcard(value: Any) -> str:
    # a vCard 3.0 text value (RFC 2426 4.1): backslash, comma, semicolon and newline escaped; a list
    # (CATEGORIES) becomes a comma-separated list of escaped values
    if isinstance(value, list):
        return ",".join(_vcard(v) for v in value)
    text = _text(value)
    for raw, escaped in (("\\", "\\\\"), (",", "\\,"), (";", "\\;"), ("\n", "\\n")):
        text = text.replace(raw, escaped)
    return text


# template filters (``{path|name}``): the few formats the app screens need; no code from the data
FILTERS: dict[str, Callable[[Any], Any]] = {
    "int": _int,
    "text": lambda v: _text(v),  # a number as text ("7"), e.g. to edit it in a field
    "pad2": lambda v: f"{_int(v):02d}" if _int(v) is not None else _text(v),
    "duration": lambda v: _clock(v, False),
    "elapsed": lambda v: _clock(v, True),
    "hms": _hms,
    "join": lambda v: ", ".join(_text(x) for x in v) if isinstance(v, list) else _text(v),
    "vcard": _vcard,
}


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
