"""Requests run on worker threads; their events reach the UI in frames.

A decoding step takes 10-20 ms and yields two events. Posting each to the UI made the UI thread
re-render Markdown and panels ~150 times a second while the engine waited for the GIL: the app
decoded at 6-46 tok/s where ``hexa ask`` did 75-130. So a job only appends its events to an
``Inbox``; the screen takes everything waiting once per frame (``FRAME_S``) and renders it at once.
"""
from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from agents.common import cancelled_done
from engine.heap import release_freed

FRAME_S = 1 / 8         # text frames while a job streams: each costs the UI thread a few ms
                        # that the engine waits for (8 a second: 14% of a core on a replayed
                        # answer, 17% at 12, 6% drawing no text)
PANELS_S = 0.5          # panel refreshes while it streams: redrawing them every frame cost more
                        # than the text (app at 0.65x the engine's decode speed, 0.75-0.85x without)


@dataclass(frozen=True)
class Finished:
    """The job's generator ended (``error``: the one-line reason it failed)."""
    error: str | None = None


@dataclass
class Job:
    rid: int
    cancel: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


class Inbox:
    """(request id, event) pairs from job threads; deque appends and pops are thread-safe."""

    def __init__(self) -> None:
        self._items: deque[tuple[int, Any]] = deque()

    def put(self, rid: int, event: Any) -> None:
        self._items.append((rid, event))

    def take(self) -> list[tuple[int, Any]]:
        out = []
        while self._items:
            out.append(self._items.popleft())
        return out

    def __bool__(self) -> bool:
        return bool(self._items)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def job_threads() -> ThreadPoolExecutor:
    """The threads every request runs on, reused. A new thread per request let glibc spread the
    engine's per-request buffers over new malloc arenas: resident memory grew by ~30 MB a request."""
    return ThreadPoolExecutor(max_workers=3, thread_name_prefix="hexa-job")


def pump(job: Job, events: Callable[[Job], Iterator], inbox: Inbox) -> None:
    """Job thread: run the agent's event generator, every event into the inbox, then Finished."""
    error = None
    try:
        for event in events(job):
            inbox.put(job.rid, event)
    except Exception as exc:  # every failure becomes a one-line message in the app
        error = one_line(exc)
    finally:
        release_freed()          # the request's freed buffers back to the system (glibc keeps them)
        inbox.put(job.rid, Finished(error))
        job.done.set()


class OneAtATime:
    """The engine, generating for one request at a time (its KV cache and model are not
    reentrant). The lock is held only while ``generate`` runs, so reading a document into memory
    (which needs only the tokenizer) never makes a chat wait."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:      # encode, decode, chat_ids, model_name, ...
        return getattr(self.engine, name)

    def generate(self, *args: Any, cancel: threading.Event | None = None, **kwargs: Any) -> Iterator:
        while not self.lock.acquire(timeout=0.05):  # waiting for another request: Esc still works
            if cancel is not None and cancel.is_set():
                yield cancelled_done(kwargs.get("method", ""))
                return
        try:
            yield from self.engine.generate(*args, cancel=cancel, **kwargs)
        finally:
            self.lock.release()
