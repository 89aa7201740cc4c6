"""One request on the device at a time, a bounded number waiting, the rest refused.

The engine (its model, KV cache and prefix store) is not reentrant, and on a phone or a laptop
two requests decoding together would each run at half speed anyway. So every job runs on the one
engine thread, in arrival order; ``admit`` refuses a request when ``waiting`` are already queued
behind the running one (the server answers 429). Events cross from the engine thread to the event
loop in batches (``Ticket``): the first at once, then at most every ``FLUSH_S``.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

END = object()          # the job's last item: nothing follows
WAITING = object()      # ``Ticket.next`` timed out: no item yet
FLUSH_S = 0.03          # while an answer streams, items reach the loop in batches this far apart

Emit = Callable[[Any], None]
Work = Callable[[threading.Event, Emit], None]    # runs on the engine thread


class QueueFull(Exception):
    pass


class Ticket:
    """One admitted request: its cancel flag, its place in the queue, and its items in transit.

    Items cross from the engine thread in batches: the engine thread wakes the event loop only
    when the loop is not already coming back for more (``_armed``), and the loop comes back at most
    every ``FLUSH_S`` while items flow. Waking the loop for each of a step's two events cost the
    engine thread the GIL 150-250 times a second; a batch every ``FLUSH_S`` costs it 30 times."""

    def __init__(self, queue: "DeviceQueue") -> None:
        self.cancel = threading.Event()
        self._queue = queue
        self._released = False
        self._lock = threading.Lock()
        self._pending: deque = deque()     # filled by the engine thread
        self._local: deque = deque()       # taken by the loop, handed out by ``next``
        self._armed = False                # the loop will drain without being woken
        self._wake: asyncio.Event | None = None
        self._drained_at: float | None = None
        self.on_release: Callable[[], None] | None = None
        self.checked = 0.0        # when the client was last seen connected (time.monotonic)

    def start(self, work: Work) -> None:
        """Queue ``work`` on the engine thread; its items arrive through ``next``."""
        loop = asyncio.get_running_loop()
        wake = self._wake = asyncio.Event()

        def emit(item: Any) -> None:
            with self._lock:
                self._pending.append(item)
                if self._armed:
                    return
                self._armed = True
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:      # the loop is gone (server shutting down): nobody is listening
                self.cancel.set()

        def job() -> None:
            try:
                if not self.cancel.is_set():    # a client that left while waiting costs nothing
                    work(self.cancel, emit)
            finally:
                emit(END)

        future = loop.run_in_executor(self._queue.pool, job)
        # the place is freed when the engine thread is done with the job, not when the client leaves
        future.add_done_callback(lambda _: self.release())

    async def next(self, timeout: float | None = None) -> Any:
        """The job's next item (``END`` last), or ``WAITING`` when ``timeout`` seconds pass first."""
        assert self._wake is not None
        while not self._local:
            if self._drained_at is not None:      # items were flowing: let a batch gather
                delay = FLUSH_S - (time.monotonic() - self._drained_at)
                if delay > 0:
                    await asyncio.sleep(delay)
            with self._lock:
                self._local.extend(self._pending)
                self._pending.clear()
                if not self._local:               # nothing: the next item wakes the loop
                    self._armed = False
                    self._wake.clear()
            if self._local:
                self._drained_at = time.monotonic()
                break
            self._drained_at = None
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except asyncio.TimeoutError:
                return WAITING
        return self._local.popleft()

    def ready(self) -> list[Any]:
        """The items already here (the rest of a batch), without waiting."""
        items = list(self._local)
        self._local.clear()
        return items

    def abandon(self) -> None:
        """The client is gone: stop the job (at its next step, or before it starts)."""
        self.cancel.set()

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._queue.pending -= 1
            if self.on_release is not None:
                self.on_release()


class DeviceQueue:
    def __init__(self, waiting: int) -> None:
        self.waiting = waiting
        self.pending = 0          # admitted and not finished: the running one and those waiting
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hexa-serve-engine")

    def admit(self) -> Ticket:
        """A place in the queue (call on the event loop), or QueueFull."""
        if self.pending > self.waiting:
            raise QueueFull(f"{self.pending} requests are queued for the device (the limit is "
                            f"{self.waiting} waiting behind the one decoding)")
        self.pending += 1
        return Ticket(self)

    def status(self) -> dict[str, int]:
        return {"running": min(self.pending, 1), "waiting": max(0, self.pending - 1), "max_waiting": self.waiting}

    def submit(self, fn: Callable[[], Any]) -> "asyncio.Future":
        """Run ``fn`` on the engine thread outside the queue's count (loading the engine)."""
        return asyncio.get_running_loop().run_in_executor(self.pool, fn)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
