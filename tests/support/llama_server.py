"""A real OpenAI-compatible server for the routing tests: llama-cpp-python's, on the device's own
GGUF with one thread, on a free loopback port."""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time

import httpx


def missing() -> str | None:
    try:
        import llama_cpp.server.app  # noqa: F401
    except Exception as exc:
        return f"llama_cpp[server] is not importable ({exc.__class__.__name__}); `pip install -e .[peers]`"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(gguf) -> str:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--n_threads", "1",
                             "--n_ctx", "2048", "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):
            try:
                if httpx.get(url + "/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError("llama_cpp.server exited while starting")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
