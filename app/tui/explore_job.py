"""The agent mode's Explore as a job: the apps of the connected phone explored one after the other
on a job thread, as events the screen draws frame by frame like an episode's.

The explorer reports through a callback from inside its crawl; a job is an event generator. So
the crawl runs on a thread of its own and its reports come out of a queue as events; the job's
cancel stops it after the action under way (what it learned is already written).
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from ..phone_agent import explore_apps


@dataclass(frozen=True)
class ExploreProgress:
    """After every edge: app ``index`` of ``total`` (``report``: an ExploreReport so far)."""
    index: int
    total: int
    name: str
    report: Any


@dataclass(frozen=True)
class AppExplored:
    """One app done (its budget spent, nothing left to try, or stopped)."""
    index: int
    total: int
    name: str
    report: Any
    stopped: bool = False


@dataclass(frozen=True)
class PhoneGone:
    """The phone stopped answering mid-exploration (what was learned until then is kept)."""
    message: str


_END = object()


def explore_events(device, memory, apps: list[tuple[str, str]], budget: int,
                   cancel: threading.Event) -> Iterator:
    """ExploreProgress and AppExplored events of exploring ``apps`` into ``memory``'s graphs, and
    PhoneGone last if the phone went away; raises anything else the exploration raised."""
    from agents.ui.adb import DeviceError
    from agents.ui.knowledge import Knowledge

    out: queue.SimpleQueue = queue.SimpleQueue()
    n = len(apps)

    def crawl() -> None:
        try:
            explore_apps(device, Knowledge(memory.ui_graphs), apps, budget, cancel,
                         progress=lambda i, name, r: out.put(ExploreProgress(i, n, name, r)),
                         explored=lambda i, name, r: out.put(AppExplored(i, n, name, r, cancel.is_set())))
        except DeviceError as exc:
            out.put(PhoneGone(str(exc)))
        except BaseException as exc:          # raised again on the job's thread, as one line
            out.put(exc)
        finally:
            out.put(_END)

    threading.Thread(target=crawl, name="hexa-explore", daemon=True).start()
    while True:
        item = out.get()
        if item is _END:
            return
        if isinstance(item, BaseException):
            raise item
        yield item
