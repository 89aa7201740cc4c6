"""The app's engine in a ``hexa serve`` child process, so that drawing never waits for the engine's
GIL (in process, the app decoded at 0.82-0.83x the engine's speed: ``hexa bench --app``).

The child listens on a free loopback port with a fresh random API key (another local user cannot
use it), says where on its first line, and dies with its parent: it is stopped on close, and its
standard input is a pipe from the parent, whose end (a crash included) it watches.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Iterator

from engine.errors import EngineError
from engine.events import Event, Notice

from .client import RemoteEngine

KEY_VAR = "HEXA_CHILD_API_KEY"


class ChildEngine(RemoteEngine):
    """A RemoteEngine over a ``hexa serve`` process it started and stops on ``close``. If that
    process ends (killed, out of memory), the request streaming fails with one line saying how, and
    the next request starts a new process first (its kept prefixes and drafting history are gone)."""

    def __init__(self, proc: subprocess.Popen, url: str, key: str,
                 respawn: Callable[[], tuple[subprocess.Popen, str, str]] | None = None):
        self.proc = proc
        self._respawn = respawn
        self._connect(url, key)

    def _connect(self, url: str, key: str) -> None:
        try:
            super().__init__(url, key)
        except BaseException:
            stop(self.proc)
            raise
        self.backend_name += f" (process {self.proc.pid})"     # the Device panel says where it runs

    def ended(self) -> str:
        """How the process ended ("" while it runs)."""
        code = self.proc.poll()
        if code is None:
            return ""
        if code < 0:
            try:
                return f"killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def generate(self, prompt, **options) -> Iterator[Event]:
        how = self.ended()
        if how and self._respawn is not None:
            t0 = time.monotonic()
            self.http.close()
            self.proc, url, key = self._respawn()
            self._connect(url, key)
            yield Notice(f"The engine process had ended ({how}); a new one started in "
                         f"{time.monotonic() - t0:.1f} s.")
        yield from super().generate(prompt, **options)

    def _unreachable(self, exc) -> EngineError:
        try:                      # a killed process drops its sockets an instant before it is reaped
            self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            return super()._unreachable(exc)
        return EngineError(f"the engine process ended ({self.ended()}): the next request starts a new one")

    def index_response(self, token_ids) -> None:
        if not self.ended():      # an ended process's history is gone with it
            super().index_response(token_ids)

    def close(self) -> None:
        super().close()
        stop(self.proc)


def start(settings, progress: Callable[[str], None] | None = None, timeout: float = 600.0) -> ChildEngine:
    """Start ``hexa serve`` with ``settings``' model options and wait until its model is loaded."""
    return ChildEngine(*_spawn(settings, progress, timeout), respawn=lambda: _spawn(settings, None, timeout))


def _spawn(settings, progress: Callable[[str], None] | None, timeout: float) -> tuple[subprocess.Popen, str, str]:
    """A ``hexa serve`` process with ``settings``' model options, its model loaded: (process, url, key)."""
    key = secrets.token_urlsafe(24)
    flags = ["--port", "0", "--host", "127.0.0.1", "--parent-pipe"]
    for name, flag in (("model", "--model"), ("backend", "--backend"), ("context", "--context"),
                       ("threads", "--threads"), ("method", "--method"), ("soc", "--soc"),
                       ("cost_profile", "--cost-profile")):
        value = getattr(settings, name)
        if value is not None:
            flags += [flag, str(value)]
    env = {**os.environ, KEY_VAR: key, "HEXA_SERVE_API_KEY_ENV": KEY_VAR,
           # answers are indexed by the app itself (index_response), as in process
           "HEXA_HISTORY_DRAFTING": "false", "HEXA_SERVE_QUEUE": "16"}
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", *flags], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    url, ready, lines = None, False, []
    deadline = time.monotonic() + timeout
    while not ready:
        line = proc.stderr.readline()
        if not line:
            stop(proc)
            raise EngineError(f"the engine process ended: {lines[-1] if lines else 'no output'}")
        line = line.strip()
        lines.append(line.removeprefix("hexa: "))
        if line.startswith("hexa: serving on "):
            url = line.split()[3].removesuffix("/v1")
        elif line.startswith("hexa: ready"):
            ready = True
        elif progress is not None:
            progress(lines[-1])
        if time.monotonic() > deadline:
            stop(proc)
            raise EngineError("the engine process did not load its model in time")
    # keep reading its stderr, or the child blocks once the pipe is full
    threading.Thread(target=_drain, args=(proc,), daemon=True, name="hexa-child-stderr").start()
    return proc, url, key


def _drain(proc: subprocess.Popen) -> None:
    for _ in proc.stderr:
        pass


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        proc.stdin.close()        # the child's watch ends it
    except OSError:
        pass
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
