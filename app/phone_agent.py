"""What every entry point does around the UI agent (``hexa agent``, ``hexa agent explore``,
``hexa agent-bench`` and the TUI's agent mode): the agent's options from the settings, the phone's
apps by name, and exploring apps one after the other with progress. The agent itself never reads
the settings, and never learns whether the phone is the virtual one: both are the app's knowledge.
"""
from __future__ import annotations

import sys
import threading
from dataclasses import replace
from typing import Any, Callable, Iterable

from agents.common import AgentError
from agents.ui.actions import APPS
from agents.ui.options import AgentOptions

REAL_PHONE_SETTLE_S = 1.0     # a real phone animates after a tap; the virtual one does not
EXPLORE_BUDGET = 300          # actions per app for `hexa agent explore` and the TUI's Explore

# (app index, app name, the exploration's report so far)
ExploreProgress = Callable[[int, str, Any], None]


def agent_options(settings, *, virtual: bool, **overrides) -> AgentOptions:
    """The agent's options from the user's settings (``overrides``: the bench's rungs)."""
    return AgentOptions(**{"policy": settings.agent_policy, "max_steps": settings.agent_steps,
                           "elements": settings.agent_elements,
                           "method": settings.method, "history_drafting": settings.history_drafting,
                           "settle_s": 0.0 if virtual else REAL_PHONE_SETTLE_S, **overrides})


def connect(settings, locs, on_auth=None):
    """The phone in the settings, connected (``DeviceError`` with a one-line reason)."""
    from agents.ui.adb import AdbConnection
    from agents.ui.device import Device

    def say_auth():
        print(f"hexa: allow hexa's adb key on {settings.device}'s screen", file=sys.stderr)

    device = Device(AdbConnection(settings.device, locs.adb_keys, on_auth=on_auth or say_auth))
    try:
        device.connect()
    except BaseException:
        device.close()
        raise
    return device


def describe(device) -> str:
    return f"{device.address} ({device.model or 'unknown model'}, {device.size[0]}x{device.size[1]})"


def is_virtual(device) -> bool:
    """Whether ``device`` is hexa's virtual phone (it answers ``hexa-phone state``)."""
    from agents.harness.control import PhoneControl

    return PhoneControl(device.conn).is_virtual()


# -- apps by name ------------------------------------------------------------------------------------
def app_label(package: str, apps: dict[str, str] | None = None) -> str:
    """The name a user knows an app by: the phone's own list first, then hexa's known apps."""
    for name, pkg in (apps or {}).items():
        if pkg == package:
            return name
    return next((name for name, pkgs in APPS.items() if package in pkgs), package)


def resolve_apps(names: Iterable[str], apps: dict[str, str]) -> list[tuple[str, str]]:
    """(name, package) of each app named (a name in any case, or a package); AgentError naming
    the apps there are when one is not among them."""
    out: list[tuple[str, str]] = []
    for given in names:
        word = given.strip()
        hit = next(((n, p) for n, p in apps.items() if word.lower() == n.lower() or word == p), None)
        if hit is None:
            known = ", ".join(apps) or "none"
            raise AgentError(f"unknown app {given!r} (this phone's apps: {known})")
        if hit not in out:
            out.append(hit)
    return out


def known_apps(memory) -> list[dict]:
    """The apps whose graph the memory keeps: package, screens, edges, info (call off the UI thread)."""
    rows = getattr(memory, "ui_graphs", None)
    return rows.apps() if rows is not None else []


def known_line(rows: list[dict], apps: dict[str, str] | None = None) -> str:
    """One line: the apps explored so far and how much of each."""
    if not rows:
        return "no app explored yet"
    return "explored: " + ", ".join(f"{app_label(r['package'], apps)} ({r['screens']} screens)" for r in rows)


def forget_app(memory, given: str) -> str:
    """Drop an app's graph (by name or package); its package. AgentError for an app not known."""
    rows = known_apps(memory)
    packages = [r["package"] for r in rows]
    by_name = {app_label(p).lower(): p for p in packages}
    package = given if given in packages else by_name.get(given.strip().lower())
    if package is None:
        known = ", ".join(f"{app_label(p)} ({p})" for p in packages) or "none"
        raise AgentError(f"no graph kept for {given!r} (apps explored: {known})")
    memory.ui_graphs.forget(package)
    return package


# -- exploring -----------------------------------------------------------------------------------
def progress_text(index: int, total: int, name: str, report) -> str:
    return (f"exploring {name} ({index + 1}/{total}): {report.actions}/{report.budget} actions, "
            f"{report.screens} screens, {report.edges} edges")


def summary_text(report, stopped: bool = False) -> str:
    """``ExploreReport.line()`` with why it ended early, if it did."""
    line = report.line()
    if report.note:
        line += f" — {report.note}"
    if stopped and not report.finished:
        line += " — stopped (run it again to go on)"
    return line


def explore_apps(device, knowledge, apps: list[tuple[str, str]], budget: int,
                 cancel: threading.Event | None = None, progress: ExploreProgress | None = None,
                 explored: ExploreProgress | None = None, before: Callable[[str], None] | None = None) -> list:
    """Explore each (name, package) in turn into ``knowledge``; their reports. ``progress`` is
    called after every edge, ``explored`` once per app, ``before(package)`` before each (the bench
    resets its phone there); the phone is left on its home screen. An app that cannot be explored
    gets a report with the reason in ``note`` and the others go on; a phone that goes away raises
    ``DeviceError``."""
    from agents.ui.explore import ExploreError, ExploreReport, Explorer

    if budget < 1:
        raise AgentError(f"the exploration budget must be at least 1 action, got {budget}")
    cancel = cancel or threading.Event()
    reports = []
    for i, (name, package) in enumerate(apps):
        if cancel.is_set():
            break
        if before is not None:
            before(package)
        tell = None if progress is None else (lambda r, i=i, name=name: progress(i, name, replace(r)))
        try:
            report = Explorer(device, knowledge, budget, progress=tell, cancel=cancel).explore(package)
        except ExploreError as exc:
            report = ExploreReport(package, budget=budget, note=str(exc))
        reports.append(report)
        if explored is not None:
            explored(i, name, report)
    if reports:
        _home(device)
    return reports


def _home(device) -> None:
    """Leave the phone on its home screen, where a user (and the next task) expects it."""
    from agents.ui.actions import ActionError

    try:
        device.key("home")
    except ActionError:
        pass
