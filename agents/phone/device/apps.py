"""Loads the phone's catalogue: ``assets/phone/device.json`` (properties and installed packages)
and the app definitions ``assets/phone/apps/*.json``, validated at load so a typo in a definition
fails with the file and the screen named instead of misbehaving at a tap. They are read through
``importlib.resources`` (the phone imports nothing of hexa's; tests/test_structure.py checks both).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from .actions import op_of
from .checks import check

ASSETS = files("assets.phone")
RESERVED = {"data", "local", "args", "item", "index", "foreground", "visited", "files"}
WIDGETS = {"group", "row", "list", "grid", "spacer", "text", "category", "image", "button", "icon_button",
           "icon", "tile", "edit", "slider", "choice", "tabs", "main_switch", "pref", "dial"}
SCREEN_KEYS = {"kind", "activity", "title", "toolbar", "up", "header", "body", "footer", "fab", "local",
               "autofocus", "swipe_up", "root_id", "list_id", "list_cls", "message", "buttons", "list",
               "cancelable", "placeholder", "doc", "on_back"}


@dataclass
class App:
    id: str
    package: str
    label: str
    main: str                               # screen shown by the launcher activity
    screens: dict[str, dict]
    activities: dict[str, str] = field(default_factory=dict)  # launchable activity -> screen
    state: dict = field(default_factory=dict)                 # initial state namespaces
    data: dict = field(default_factory=dict)                  # constants templates read as data.*
    launcher: str | None = None             # launcher activity (None: not in the app list)
    subactivity: str | None = None          # activity of screens that name none (Settings' SubSettings)

    def activity_of(self, screen: str) -> str:
        named = self.screens[screen].get("activity")
        if named:
            return named
        return (self.launcher if screen == self.main else self.subactivity or self.launcher) or ""


@dataclass
class Catalog:
    properties: dict[str, str]
    apps: dict[str, App]                     # by id
    by_package: dict[str, App]
    packages: list[str]                      # every installed package, launchable or not
    home: str                                # the launcher's package
    state: dict = field(default_factory=dict)  # device-wide state namespaces (clock time, battery)


@lru_cache(maxsize=4)
def load_catalog(root: Traversable | Path = ASSETS) -> Catalog:
    """The catalogue under ``root`` (cached: it is read-only; devices copy the state they change)."""
    device = _json(root / "device.json")
    apps: dict[str, App] = {}
    folder = root / "apps"
    for path in sorted((p for p in folder.iterdir() if p.name.endswith(".json")), key=lambda p: p.name):
        app = load_app(path, folder)
        if app.id in apps:
            raise ValueError(f"{path.name}: app id {app.id!r} defined twice")
        apps[app.id] = app
    by_package = {a.package: a for a in apps.values()}
    for entry in device["packages"]:
        pkg = entry["package"]
        if pkg in by_package:
            app = by_package[pkg]
            app.label = entry.get("label", app.label)
            app.launcher = entry.get("activity", app.launcher)
        elif entry.get("activity"):
            app = _placeholder(entry)
            apps[app.id] = by_package[pkg] = app
    for app in apps.values():
        _validate_targets(app, apps)
    home = device["home"]
    if home not in by_package:
        raise ValueError(f"device.json: home package {home!r} has no app definition")
    packages = sorted({e["package"] for e in device["packages"]} | set(by_package))
    return Catalog(device["properties"], apps, by_package, packages, home, device.get("state", {}))


def load_app(path: Traversable | Path, folder: Traversable | Path | None = None) -> App:
    """One app definition; ``folder`` holds its includes (default: the file's own folder)."""
    raw = _json(path)
    folder = Path(path).parent if folder is None else folder
    for extra in raw.pop("include", []):  # big apps split their screens/data over files
        more = _json(folder.joinpath(*extra.split("/")))
        for key in ("screens", "data", "state"):
            raw.setdefault(key, {}).update(more.get(key, {}))
    where = path.name
    for key in ("id", "package", "main", "screens"):
        if key not in raw:
            raise ValueError(f"{where}: missing {key!r}")
    clash = RESERVED & set(raw.get("state", {}))
    if clash:
        raise ValueError(f"{where}: state namespaces {sorted(clash)} are reserved")
    for name, screen in raw["screens"].items():
        _validate_screen(screen, f"{where}: screen {name!r}")
    if raw["main"] not in raw["screens"]:
        raise ValueError(f"{where}: main screen {raw['main']!r} is not defined")
    return App(id=raw["id"], package=raw["package"], label=raw.get("label", raw["id"]), main=raw["main"],
               screens=raw["screens"], activities=raw.get("activities", {}), state=raw.get("state", {}),
               data=raw.get("data", {}), launcher=raw.get("launcher"), subactivity=raw.get("subactivity"))


def _json(path: Traversable | Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path.name}: not JSON ({e.msg} at line {e.lineno})") from None


def _placeholder(entry: dict) -> App:
    """An installed app nobody modelled yet: one screen saying so (``foreground.screen`` is
    ``<id>:placeholder``)."""
    label = entry.get("label", entry["package"])
    screen = {"placeholder": True, "toolbar": "small", "up": False, "title": label, "body": [
        {"type": "image", "height": 630, "desc": label},
        {"type": "text", "style": "title", "text": label},
        {"type": "text", "text": "This app is not modelled on the virtual phone."}]}
    return App(id=entry.get("id", entry["package"]), package=entry["package"], label=label, main="placeholder",
               screens={"placeholder": screen}, launcher=entry["activity"])


def _validate_screen(screen: dict, where: str) -> None:
    unknown = set(screen) - SCREEN_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    if screen.get("kind", "screen") not in ("screen", "dialog", "menu", "sheet"):
        raise ValueError(f"{where}: kind must be screen, dialog, menu or sheet")
    for part in ("header", "body", "footer"):
        for i, w in enumerate(screen.get(part, [])):
            _validate_widget(w, f"{where} {part}[{i}]")
    if screen.get("fab"):
        _validate_widget(screen["fab"], f"{where} fab")
    bar = screen.get("toolbar")
    for i, w in enumerate(bar.get("actions", []) if isinstance(bar, dict) else []):
        _validate_widget(dict(w, type=w.get("type", "icon_button")), f"{where} toolbar action {i}")
    for i, b in enumerate(screen.get("buttons", [])):
        _validate_actions(b.get("tap"), f"{where} button {i}")
    _validate_actions(screen.get("swipe_up"), f"{where} swipe_up")
    _validate_actions(screen.get("on_back"), f"{where} on_back")


def _validate_widget(w: Any, where: str) -> None:
    if not isinstance(w, dict) or w.get("type") not in WIDGETS:
        raise ValueError(f"{where}: a widget needs a type of {sorted(WIDGETS)}, got {w!r:.80}")
    if "if" in w:
        _validate_predicate(w["if"], where)
    for key in ("tap", "long_tap", "submit", "then", "swipe"):
        _validate_actions(w.get(key), f"{where} {key}")
    for key in ("children", "item", "cell", "empty", "section_item"):
        kids = w.get(key, [])
        for i, kid in enumerate(kids if isinstance(kids, list) else [kids]):
            _validate_widget(kid, f"{where}.{key}[{i}]")
    for i, tab in enumerate(w.get("items", []) if w["type"] == "tabs" else []):
        _validate_actions(tab.get("tap"), f"{where} tab {i}")
    for i, kid in enumerate(w.get("items", []) if w["type"] in ("list", "grid", "dial") else []):
        if not isinstance(kid, dict):
            raise ValueError(f"{where} items[{i}]: expected an object")


def _validate_actions(steps: Any, where: str) -> None:
    if steps is None:
        return
    if not isinstance(steps, list):
        raise ValueError(f"{where}: actions are a list of steps")
    for i, step in enumerate(steps):
        try:
            op = op_of(step)
        except ValueError as e:
            raise ValueError(f"{where}[{i}]: {e}") from None
        if op in ("when", "each"):
            pred = step["when"] if op == "when" else step.get("where")
            if pred is not None:
                _validate_predicate(pred, f"{where}[{i}]")
            _validate_actions(step.get("then"), f"{where}[{i}].then")
            _validate_actions(step.get("else"), f"{where}[{i}].else")


def _validate_predicate(pred: Any, where: str) -> None:
    try:
        check(pred, {})
    except ValueError as e:
        raise ValueError(f"{where}: bad predicate: {e}") from None


def _walk_steps(app: App):
    """Every action step of an app (to check ``go`` targets once everything is loaded)."""
    stack: list[Any] = list(app.screens.values())
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            if len(obj) >= 1 and any(k in obj for k in ("go", "pop_to")) and "type" not in obj:
                yield obj
            stack.extend(obj.values())
        elif isinstance(obj, list):
            stack.extend(obj)


def _validate_targets(app: App, apps: dict[str, App]) -> None:
    for step in _walk_steps(app):
        target = step.get("go") or step.get("pop_to")
        if not isinstance(target, str) or "{" in target:
            continue  # computed at run time
        app_id, _, screen = target.rpartition(":")
        owner = apps.get(app_id) if app_id else app
        if owner is None or screen not in owner.screens:
            raise ValueError(f"{app.id}: action target {target!r} is not a defined screen")
