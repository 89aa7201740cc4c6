"""Starting ``hexa serve``: the API key rule (refused at start off loopback, 401 without the key),
503 while the model loads or after it failed to, a port in use, the command end to end."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import openai
import pytest

from app.cli import main
from engine.errors import EngineError
from support.serve_helpers import serving

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "my-laptop.lan"])
def test_a_non_loopback_address_without_a_key_is_refused_in_one_line(monkeypatch, capsys, host):
    monkeypatch.delenv("HEXA_SERVE_API_KEY", raising=False)
    assert main(["serve", "--host", host, "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and host in err[0] and "HEXA_SERVE_API_KEY" in err[0], err


def test_the_key_variable_is_a_setting(monkeypatch, capsys):
    monkeypatch.setenv("HEXA_SERVE_API_KEY_ENV", "MY_KEY")
    monkeypatch.delenv("MY_KEY", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "$MY_KEY" in capsys.readouterr().err


def test_a_port_in_use_is_one_line(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"cannot listen on 127.0.0.1:{port}" in err[0], err


def test_a_bad_port_is_a_setting_error(capsys):
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port 70000" in capsys.readouterr().err


def test_503_while_loading_then_served(engine):
    gate = threading.Event()

    def slow_load():
        gate.wait(30)
        return engine

    with serving(slow_load, wait=False) as server:
        r = httpx.get(server.url + "/v1/models", timeout=10)
        assert r.status_code == 503 and r.json()["error"]["code"] == "model_loading"
        assert r.headers["retry-after"] == "1"
        r = httpx.post(server.url + "/v1/completions", json={"model": "m", "prompt": "hi"}, timeout=10)
        assert r.status_code == 503 and httpx.get(server.url + "/health").status_code == 503
        gate.set()
        assert server.loaded.wait(30)
        assert httpx.get(server.url + "/health", timeout=10).json() == {"status": "ok"}


def test_a_model_that_fails_to_load_is_503_with_the_reason():
    def broken():
        raise EngineError("model file not found: /nowhere.gguf")

    with serving(broken, wait=False) as server:
        assert server.loaded.wait(10) and server.outcome == ["model file not found: /nowhere.gguf"]
        r = httpx.get(server.url + "/v1/models", timeout=10)
        assert r.status_code == 503 and "/nowhere.gguf" in r.json()["error"]["message"]


def test_with_a_key_clients_must_send_it(engine):
    with serving(lambda: engine, key="s3cret") as server:
        model = engine.model_name
        wrong = openai.OpenAI(base_url=server.url + "/v1", api_key="guess", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            wrong.models.list()
        r = httpx.post(server.url + "/v1/completions", json={"model": model, "prompt": "hi"}, timeout=10)
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        right = openai.OpenAI(base_url=server.url + "/v1", api_key="s3cret", max_retries=0)
        assert right.completions.create(model=model, prompt="Hi", max_tokens=2).usage.completion_tokens >= 1


@pytest.mark.slow
def test_the_command_serves_and_stops_on_sigint(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HEXA_SERVE_API_KEY": ""}
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--port", "0", "--max-tokens", "4"],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                            # as from a terminal: a runner started in the background (`make test &`)
                            # ignores SIGINT, and a child would inherit that and never see Ctrl-C
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = proc.stderr.readline()
        assert first.startswith("hexa: serving on http://127.0.0.1:"), first
        url = first.split()[3]
        line = proc.stderr.readline()
        while line.startswith("hexa: loading: "):     # progress while the model loads
            line = proc.stderr.readline()
        assert line.startswith("hexa: ready"), line
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
        model = client.models.list().data[0].id
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}])
        assert r.usage.completion_tokens <= 4             # the --max-tokens setting is the default
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(20)
    rest = proc.stderr.read()
    assert code == 130 and rest.strip() == "hexa: interrupted", rest     # Ctrl-C, as any hexa command


@pytest.mark.slow
def test_the_command_says_why_a_model_cannot_load(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--port", "0", "--model",
                        str(tmp_path / "missing.gguf")], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("hexa: serving on") and "missing.gguf" in lines[-1] and len(lines) == 2, lines


class Breaking:
    """Fault injection: the real engine, whose generation fails after its first event."""

    def __init__(self, engine):
        self.engine = engine

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def generate(self, *args, **kwargs):
        events = self.engine.generate(*args, **kwargs)
        yield next(events)
        events.close()
        raise RuntimeError("the kernel fell over\nsecond line")


def test_an_unexpected_failure_is_one_json_line(engine):
    with serving(lambda: Breaking(engine)) as server:
        body = {"model": engine.model_name, "prompt": "Hi", "max_tokens": 4}
        r = httpx.post(server.url + "/v1/completions", json=body, timeout=30)
        assert r.status_code == 500 and r.json()["error"]["message"] == \
            "internal error: RuntimeError: the kernel fell over"
        with httpx.stream("POST", server.url + "/v1/completions", json=body | {"stream": True}, timeout=30) as s:
            lines = [line for line in s.iter_lines() if line]
        assert '"error"' in lines[-1] and "the kernel fell over" in lines[-1] and "Traceback" not in "".join(lines)
        ok = httpx.post(server.url + "/v1/completions", json=body, timeout=30)
        assert ok.status_code == 500            # the server itself is still there
