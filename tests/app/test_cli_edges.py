"""Command-line rough edges (issue 24): help shows what to type (HOST:PORT, N, FILE), the phone's
commands share one address flag, and a model hexa cannot run is refused from its GGUF header at
once (one line, nothing converted), by `ask` and by `doctor`."""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import build_parser
from support.synthetic_gguf import write_gguf

ROOT = Path(__file__).resolve().parents[2]


def parsers(parser: argparse.ArgumentParser, path: str = "hexa"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def test_every_option_that_takes_a_value_names_what_to_type():
    missing = []
    for path, parser in parsers(build_parser()):
        for action in parser._actions:
            if (action.option_strings and action.nargs != 0 and action.help != argparse.SUPPRESS
                    and action.metavar is None and not action.choices):
                missing.append(f"{path} {action.option_strings[0]}")
    assert not missing, missing
    out = subprocess.run([sys.executable, "-m", "app.cli", "agent", "--help"], capture_output=True, text=True,
                         cwd=ROOT).stdout
    assert "--device HOST:PORT" in out and "SETTING_" not in out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("flags", [["--device", "127.0.0.1:{port}"], ["--port", "{port}"]])
def test_phone_serve_takes_device_like_state_and_reset_and_still_port(tmp_path, flags):
    port = free_port()
    env_dirs = {f"HEXA_{n}_DIR": str(tmp_path / n.lower()) for n in ("CONFIG", "DATA", "LOG")}
    env = {**os.environ, **env_dirs}
    cmd = [sys.executable, "-m", "app.cli", "phone", "serve", "--no-auth", *[f.format(port=port) for f in flags]]
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "the phone did not start"
                time.sleep(0.1)
        r = subprocess.run([sys.executable, "-m", "app.cli", "phone", "reset", "--device", f"127.0.0.1:{port}"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    finally:
        server.terminate()
        server.wait(10)


def test_a_bad_serve_address_is_one_line(capsys):
    from app.cli import main

    assert main(["phone", "serve", "--device", "localhost"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected HOST:PORT" in err[0]


def test_an_unsupported_architecture_is_refused_from_the_header_at_once(tmp_path):
    model = write_gguf(tmp_path / "phi-tiny.gguf", "phi3")
    env = {f"HEXA_{n}_DIR": str(tmp_path / n.lower()) for n in ("CONFIG", "DATA", "LOG", "CACHE")}
    env = {**os.environ, **env}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "app.cli", "ask", "--model", str(model), "Hi"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "architecture 'phi3' is not supported" in r.stderr
    assert took < 2.5, f"{took:.2f} s"     # the interpreter's start included; < 1 s measured on a quiet machine
    assert not any((tmp_path / "cache").rglob("*")), "something was converted or cached"


def test_an_unsupported_architecture_is_refused_before_the_engine_imports_torch(tmp_path):
    code = (f"import sys\nfrom app.loading import load_engine\nfrom app.settings import Settings\n"
            f"from support.tui_helpers import locations_in\nfrom pathlib import Path\n"
            f"try:\n    load_engine(Settings(model={str(write_gguf(tmp_path / 'm.gguf', 'phi3'))!r}), "
            f"locations_in(Path({str(tmp_path)!r})))\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
            f"print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}:{ROOT / 'tests/app'}"})
    assert r.stdout.splitlines() == [
        "EngineError m: architecture 'phi3' is not supported here (supported: llama, qwen2, qwen3, gemma3)",
        "False"], r.stdout + r.stderr


def test_doctor_says_not_supported(tmp_path):
    from app import doctor
    from app.settings import Settings
    from support.tui_helpers import locations_in

    model = write_gguf(tmp_path / "phi-tiny.gguf", "phi3")
    ok, message = doctor._check_model(Settings(model=str(model)), locations_in(tmp_path))
    assert not ok and "not supported" in message and "not converted yet" not in message


def test_doctor_names_the_prompt_rows_arithmetic_of_each_kernel():
    """hexa doctor says what prompt rows compute with: bf16 on AMX tiles, a scale per 256 inputs
    for a K-quant's on AMD's 512-bit tiles, else decoding's arithmetic (engine.prompt = int8 too)."""
    from types import SimpleNamespace as NS

    from app import doctor

    amx, wide, plain = NS(amx=True, wide=False), NS(amx=False, wide=True), NS(amx=False, wide=False)
    own = NS(engine_decode="int8", engine_prompt="bf16")
    assert doctor._arithmetic(own, amx) == "int8 arithmetic for decoding, bf16 for prompt rows"
    assert "one scale per 256 inputs" in doctor._arithmetic(own, wide)
    assert doctor._arithmetic(own, plain) == "int8 arithmetic for prefill and decoding"
    for kernel in (amx, wide):
        assert doctor._arithmetic(NS(engine_decode="int8", engine_prompt="int8"), kernel) == \
            "int8 arithmetic for prefill and decoding"
