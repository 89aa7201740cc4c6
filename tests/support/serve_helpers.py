"""A real ``hexa serve`` (uvicorn on a free loopback port, in a thread) for the tests."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable

from app.serve.run import Server
from app.settings import Settings


@contextmanager
def serving(load: Callable[[], Any], key: str | None = None, wait: bool = True, **settings: Any):
    """A running server (``.url``, ``.app``); ``wait``: until the engine is loaded."""
    loaded = threading.Event()
    outcome: list[str | None] = []

    def on_load(error: str | None) -> None:
        outcome.append(error)
        loaded.set()

    options = {"serve_port": 0, "serve_queue": 256, "history_drafting": True} | settings
    server = Server(load, Settings(**options), key, on_load=on_load)
    server.loaded, server.outcome = loaded, outcome
    thread = threading.Thread(target=server.run, name="hexa-serve-test", daemon=True)
    thread.start()
    try:
        if wait:
            assert loaded.wait(60) and outcome == [None], outcome
        yield server
    finally:
        server.stop()
        thread.join(15)
        assert not thread.is_alive(), "the server did not stop"


def status(server) -> dict:
    import httpx

    return httpx.get(server.url + "/hexa/status", timeout=10).json()


def own_engine():
    """An engine of its own for a server under test: a server is another machine, so nothing the
    device's engine kept (prefixes, drafting history, a test's leftovers) is shared with it."""
    import os

    from engine import Engine

    return Engine.load(None, cache_dir=os.environ["HEXA_CACHE_DIR"])


def live(engine, client, caps, prices, device_options: dict | None = None):
    """A router's ``Live`` for one request at a time: the device's TTFT line and the server's TTFTs
    fixed (the tests drive the plan themselves)."""
    from engine.routing.live import Live
    from engine.routing.models import DeviceModel, ServerTTFT

    return Live(engine, client, caps, DeviceModel(0.005, 0.0, 50.0), ServerTTFT([0.3, 0.5]), prices,
                device_options=device_options)
