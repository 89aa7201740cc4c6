"""What a tap does: the action steps of app definitions, run against the device.

A step is a one-operator object (see ``docs/phone.md``); values are templates rendered
in the context of the tapped element (its list ``item``, the screen's ``local`` and ``args``).
Writes go through that context, so ``local.query`` lands in the screen's locals and
``settings.wifi`` in the device state.
"""
from __future__ import annotations

from typing import Any, Protocol

from .checks import check
from .paths import get, put, render

# operator -> keys it allows besides itself
OPS: dict[str, set[str]] = {
    "go": {"args"}, "back": set(), "pop_to": set(), "home": set(), "open": set(), "launch": set(),
    "set": {"value"}, "toggle": set(), "inc": {"by", "min", "max", "wrap"}, "append": {"value", "unique", "at"},
    "remove": {"value", "where"}, "when": {"then", "else"}, "busy": set(), "focus": set(),
    "each": {"where", "then"}, "write": {"text"},
}


class Device(Protocol):
    busy: int

    def push(self, target: str, args: dict) -> None: ...
    def back(self, count: int = 1) -> None: ...
    def pop_to(self, target: str) -> None: ...
    def go_home(self) -> None: ...
    def open(self, package: str) -> bool: ...
    def launch(self, package: str, activity: str | None = None) -> bool: ...
    def set_focus(self, path: str | None) -> None: ...
    def write_file(self, path: str, text: str) -> bool: ...


def op_of(step: Any) -> str:
    """The operator of a step; ValueError when the step is malformed."""
    if not isinstance(step, dict):
        raise ValueError(f"an action step is an object, got {step!r}")
    ops = [k for k in step if k in OPS]
    if len(ops) != 1:
        raise ValueError(f"an action step has exactly one operator of {sorted(OPS)}, got {sorted(step)}")
    extra = set(step) - {ops[0]} - OPS[ops[0]]
    if extra:
        raise ValueError(f"action {ops[0]!r} does not take {sorted(extra)}")
    return ops[0]


def _check(pred: Any, ctx: dict) -> bool:
    return check(render(pred, ctx, _check), ctx)


def run(device: Device, steps: list | None, ctx: dict) -> None:
    for step in steps or []:
        op = op_of(step)
        arg = step[op]
        if op in ("set", "toggle", "inc", "append", "remove") and "{" in arg:
            arg = str(render(arg, ctx, _check))  # a computed path: settings.{args.kind}
        value = (lambda key, default=None: render(step.get(key, default), ctx, _check))
        if op == "go":
            device.push(render(arg, ctx, _check), value("args", {}) or {})
        elif op == "back":
            device.back(int(arg) if not isinstance(arg, bool) else 1)
        elif op == "pop_to":
            device.pop_to(render(arg, ctx, _check))
        elif op == "home":
            device.go_home()
        elif op == "open":
            device.open(render(arg, ctx, _check))
        elif op == "launch":
            device.launch(render(arg, ctx, _check))
        elif op == "set":
            put(ctx, arg, value("value"))
        elif op == "toggle":
            put(ctx, arg, not get(ctx, arg))
        elif op == "inc":
            _inc(ctx, arg, value("by", 1), value("min"), value("max"), bool(step.get("wrap")))
        elif op == "append":
            items, item = get(ctx, arg), value("value")
            if items is None:  # a record made before the field existed (a conversation's first star)
                items = []
                put(ctx, arg, items)
            if not (step.get("unique") and item in items):
                items.insert(step["at"], item) if "at" in step else items.append(item)
        elif op == "remove":
            _remove(ctx, arg, step)
        elif op == "when":
            run(device, step.get("then") if _check(arg, ctx) else step.get("else"), ctx)
        elif op == "each":
            # every element of a list (optionally those matching ``where``) as ``item``, its
            # position as ``index``: archive the selected conversations, star the selected messages
            for index, item in enumerate(list(get(ctx, arg) or [])):
                ictx = dict(ctx, item=item, index=index)
                if "where" not in step or _check(step["where"], ictx):
                    run(device, step.get("then"), ictx)
        elif op == "busy":
            device.busy += int(arg)
        elif op == "focus":
            device.set_focus(arg or None)
        elif op == "write":
            device.write_file(str(render(arg, ctx, _check)), str(value("text", "")))


def _inc(ctx: dict, path: str, by: int, low: int | None, high: int | None, wrap: bool) -> None:
    new = (get(ctx, path) or 0) + by
    if wrap and low is not None and high is not None:
        new = low + (new - low) % (high - low + 1)
    if low is not None:
        new = max(low, new)
    if high is not None:
        new = min(high, new)
    put(ctx, path, new)


def _remove(ctx: dict, path: str, step: dict) -> None:
    items = get(ctx, path)
    if "where" in step:
        keep = [it for i, it in enumerate(items) if not _check(step["where"], dict(ctx, item=it, index=i))]
    else:
        target = render(step.get("value"), ctx, _check)
        keep = [it for it in items if it != target]
    items[:] = keep
