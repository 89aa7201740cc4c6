"""One request on the device at a time, a bounded number waiting, the rest refused.

The engine (its model, KV cache and prefix store) is not reentrant, and on a phone or a laptop
two requests decoding together would each run at half speed anyway. So every job runs on the one
engine thread, in arrival order; ``admit`` refuses a request when ``waiting`` are already queued
behind the running one (the server answers 429). Events cross from the engine thread to the event
loop one by one (``call_soon_threadsafe``), so a streamed chunk leaves as soon as its step is done.
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable

END = object()          # the job's last item: nothing follows
WAITING = object()      # ``Ticket.next`` timed out: no item yet

Emit = Callable[[Any], None]
Work = Callable[[threading.Event, Emit], None]    # runs on the engine thread


class QueueFull(Exception):
    pass


class Ticket:
    """One admitted request: its cancel flag and its place in the queue."""

    def __init__(self, queue: "DeviceQueue") -> None:
        self.cancel = threading.Event()
        self._queue = queue
        self._items: asyncio.Queue | None = None
        self._released = False
        self._getter: asyncio.Future | None = None
        self.on_release: Callable[[], None] | None = None
        self.checked = 0.0        # when the client was last seen connected (time.monotonic)

    def start(self, work: Work) -> None:
        """Queue ``work`` on the engine thread; its items arrive through ``next``."""
        loop = asyncio.get_running_loop()
        self._items = asyncio.Queue()
        items = self._items

        def emit(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(items.put_nowait, item)
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
        """The job's next item (``END`` last), or ``WAITING`` when ``timeout`` seconds pass first.
        The pending get is kept across timeouts (cancelling it could drop an item in 3.11)."""
        assert self._items is not None
        if self._getter is None:
            self._getter = asyncio.ensure_future(self._items.get())
        done, _ = await asyncio.wait({self._getter}, timeout=timeout)
        if not done:
            return WAITING
        item, self._getter = self._getter.result(), None
        return item

    def abandon(self) -> None:
        """The client is gone: stop the job (at its next step, or before it starts)."""
        self.cancel.set()
        if self._getter is not None:
            self._getter.cancel()
            self._getter = None

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
