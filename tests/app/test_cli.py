"""The ``hexa`` command line: help, version, paths, doctor, ask (one-shot and in a session), bench,
settings from config.toml and the environment, and the one error contract (one line, exit 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import main

HEXA = [sys.executable, "-m", "app.cli"]
ROOT = Path(__file__).resolve().parents[2]


def hexa(*args, env=None, stdin=None, home: Path | None = None):
    full_env = {**os.environ, **(env or {})}
    if home is not None:                     # a user of their own: config, data and logs there
        for name in ("CONFIG", "DATA", "LOG"):
            full_env[f"HEXA_{name}_DIR"] = str(home / name.lower())
    return subprocess.run(HEXA + list(args), capture_output=True, text=True, env=full_env,
                          input=stdin, timeout=600, cwd=ROOT)


def one_line_error(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hexa"), r.stderr
    return lines[0]


def test_help_and_version():
    r = hexa("--help")
    assert r.returncode == 0 and "ask" in r.stdout and "bench" in r.stdout and "HEXA_METHOD" in r.stdout
    r = hexa("--version")
    assert r.returncode == 0 and r.stdout.startswith("hexa ")


def test_paths_honour_environment_overrides(tmp_path):
    env = {"HEXA_CONFIG_DIR": str(tmp_path / "c"), "HEXA_DATA_DIR": str(tmp_path / "d"),
           "HEXA_CACHE_DIR": str(tmp_path / "k")}
    out = hexa("paths", env=env).stdout
    for name, folder in (("config", "c"), ("data", "d"), ("cache", "k")):
        assert f"{name}" in out and str(tmp_path / folder) in out


@pytest.mark.parametrize("args, env, words", [
    (["ask", "--threads", "-3", "hi"], {}, "--threads -3"),
    (["ask", "--temperature", "99", "hi"], {}, "--temperature 99"),
    (["ask", "--max-tokens", "-5", "hi"], {}, "--max-tokens -5"),
    (["ask", "hi"], {"HEXA_THREADS": "abc"}, "HEXA_THREADS=abc"),
    (["--method", "pld", "ask", "hi"], {}, "expected one of"),
    (["bench", "--data", "x.jsonl"], {"HEXA_BACKEND": "gpu"}, "HEXA_BACKEND=gpu"),
])
def test_bad_settings_stop_before_the_model_loads(tmp_path, args, env, words):
    t0 = time.monotonic()
    line = one_line_error(hexa(*args, env=env, home=tmp_path))
    assert words in line and time.monotonic() - t0 < 20


def test_a_bad_config_file_stops_ask_with_one_line(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_bytes(b"max_tokens = \xff\n")
    assert "not UTF-8" in one_line_error(hexa("ask", "hi", home=tmp_path))
    (tmp_path / "config" / "config.toml").write_text("max_tokens = 'lots'\n")
    assert "max_tokens" in one_line_error(hexa("ask", "hi", home=tmp_path))


def test_unexpected_errors_are_one_line_and_logged(tmp_path, monkeypatch, capsys):
    import app.cli.info as info

    def boom(args):
        raise RuntimeError("something broke\nsecond line")
    monkeypatch.setattr(info, "cmd_paths", boom)
    monkeypatch.setenv("HEXA_LOG_DIR", str(tmp_path / "logs"))
    assert main(["paths"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hexa: internal error: RuntimeError: something broke (details in") and err.count("\n") == 1
    assert "Traceback" in (tmp_path / "logs" / "errors.log").read_text()


@pytest.mark.slow
def test_doctor_reports_settings_model_and_backends(tmp_path):
    r = hexa("doctor", home=tmp_path, env={"HEXA_THREADS": "abc"})
    assert "settings" in r.stdout and "HEXA_THREADS" in r.stdout     # reported, not fatal
    assert "model" in r.stdout and "backend torch" in r.stdout and "backend qnn" in r.stdout
    assert r.returncode == 1
    ok = hexa("doctor", home=tmp_path)
    assert ok.returncode == 0
    kernels = next((line for line in ok.stdout.splitlines() if "native kernels" in line), "")
    if kernels.lstrip().startswith("ok"):      # what engine.kv resolves to, for the arithmetic in use
        assert "fp16 KV cache" in kernels
        if "512-bit tiles" in kernels:   # AVX-512 VNNI is in use then, not named as unused
            assert "avx512_vnni" not in kernels.partition("also has")[2]
        if "bf16 tiles" in kernels:      # the amx build's prompt rows use AMX-BF16: not named as unused
            assert "amx_bf16" not in kernels.partition("also has")[2]
        exact = hexa("doctor", home=tmp_path, env={"HEXA_DECODE": "exact"}).stdout
        assert "fp32 KV cache" in exact


@pytest.mark.slow
def test_ask_streams_an_answer_and_a_summary():
    r = hexa("ask", "What is the capital of France? One word.", "--max-tokens", "8")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
    assert "TTFT" in r.stderr and "decode" in r.stderr and "tok/s" in r.stderr


@pytest.mark.slow
def test_ask_reads_stdin():
    r = hexa("ask", "--max-tokens", "4", stdin="Say hi.")
    assert r.returncode == 0 and r.stdout.strip()


@pytest.mark.slow
def test_ask_honours_config_toml_and_the_environment(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('method = "vanilla"\nmax_tokens = 3\n')
    r = hexa("ask", "Tell me a long story.", home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "[vanilla]" in r.stderr and "(3 tok" in r.stderr and "stop: max_tokens" in r.stderr
    r = hexa("ask", "Tell me a long story.", home=tmp_path, env={"HEXA_MAX_TOKENS": "5"})
    assert "(5 tok" in r.stderr
    r = hexa("ask", "Tell me a long story.", "--max-tokens", "4", home=tmp_path, env={"HEXA_MAX_TOKENS": "5"})
    assert "(4 tok" in r.stderr


@pytest.mark.slow
def test_ask_continues_a_stored_conversation(tmp_path):
    r = hexa("ask", "--save", "My name is Ada. Say hello.", "--max-tokens", "6", home=tmp_path)
    assert r.returncode == 0, r.stderr
    sid = int(r.stderr.split("hexa: session ")[1].split()[0])
    r = hexa("ask", "-c", "What is my name?", "--max-tokens", "6", home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"session {sid}" in r.stderr
    r = hexa("ask", "--session", str(sid), "And again?", "--max-tokens", "4", home=tmp_path)
    assert r.returncode == 0 and f"session {sid}" in r.stderr
    from memory import Memory
    with Memory.open(tmp_path / "data") as memory:
        texts = [(m.role, m.text) for m in memory.messages(sid)]
    assert [role for role, _ in texts] == ["user", "assistant"] * 3
    assert texts[2] == ("user", "What is my name?")
    assert "no assistant session 999" in one_line_error(hexa("ask", "--session", "999", "hi", home=tmp_path))


@pytest.mark.slow
def test_user_errors_are_one_line_without_traceback(tmp_path):
    for args in (["ask", "--model", str(tmp_path / "missing.gguf"), "hi"],
                 ["ask", "--backend", "abacus", "hi"],
                 ["bench", "--data", str(tmp_path / "none.jsonl")]):
        one_line_error(hexa(*args, home=tmp_path))
    assert "--rounds must be positive" in one_line_error(
        hexa("bench", "--data", str(tmp_path / "none.jsonl"), "--rounds", "0", home=tmp_path))


@pytest.mark.slow
def test_bench_on_two_prompts(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HEXA_DECODE", "exact")   # transformers computes the fp32 arithmetic
    data = tmp_path / "bench.jsonl"
    data.write_text("\n".join(json.dumps(c) for c in [
        {"id": "s1", "task": "summary", "turns": ["Summarize: The cat sat on the mat. The cat was happy."]},
        {"id": "q1", "task": "qa", "turns": ["What is the boiling point of water?"]},
    ]))
    out = tmp_path / "out.json"
    code = main(["bench", "--data", str(data), "--methods", "vanilla,hf", "--max-new-tokens", "12",
                 "--json", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    assert "vanilla" in table and "hf" in table and "all" in table
    result = json.loads(out.read_text())
    for method in ("vanilla", "hf"):
        tasks = result["runs"][method]["tasks"]
        assert set(tasks) == {"summary", "qa", "all"}
        for row in tasks.values():
            assert {"n", "new_tokens", "seconds", "tokens_per_s", "speedup_vs_vanilla",
                    "accepted_per_step", "mismatches", "decode_tokens_per_s"} <= set(row)
        assert tasks["all"]["n"] == 2
    assert result["runs"]["vanilla"]["tasks"]["all"]["speedup_vs_vanilla"] == 1.0
    # transformers' greedy decoding on the same weights gives the same tokens as the engine
    assert result["runs"]["hf"]["tasks"]["all"]["mismatches"] == 0
    assert len(result["prompts"]) == 2 and result["prompts"][0]["results"]["vanilla"]["tokens"]
    for row in result["prompts"]:
        for method in ("vanilla", "hf"):   # time to first token is measured for both engines
            r = row["results"][method]
            assert 0 < r["ttft_s"] < r["seconds"]
