"""The ``hexa`` command line: help, version, paths, doctor, ask, bench, and one-line errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from app.cli import main

HEXA = [sys.executable, "-m", "app.cli"]


def hexa(*args, env=None, stdin=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(HEXA + list(args), capture_output=True, text=True, env=full_env,
                          input=stdin, timeout=600, cwd=Path(__file__).resolve().parents[2])


def test_help_and_version():
    r = hexa("--help")
    assert r.returncode == 0 and "ask" in r.stdout and "bench" in r.stdout
    r = hexa("--version")
    assert r.returncode == 0 and r.stdout.startswith("hexa ")


def test_paths_honour_environment_overrides(tmp_path):
    env = {"HEXA_CONFIG_DIR": str(tmp_path / "c"), "HEXA_DATA_DIR": str(tmp_path / "d"),
           "HEXA_CACHE_DIR": str(tmp_path / "k")}
    out = hexa("paths", env=env).stdout
    for name, folder in (("config", "c"), ("data", "d"), ("cache", "k")):
        assert f"{name}" in out and str(tmp_path / folder) in out


def test_doctor_reports_model_and_backends():
    r = hexa("doctor")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "model" in r.stdout and "backend torch" in r.stdout and "backend qnn" in r.stdout


def test_ask_streams_an_answer_and_a_summary():
    r = hexa("ask", "What is the capital of France? One word.", "--max-tokens", "8")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
    assert "TTFT" in r.stderr and "decode" in r.stderr and "tok/s" in r.stderr


def test_ask_reads_stdin():
    r = hexa("ask", "--max-tokens", "4", stdin="Say hi.")
    assert r.returncode == 0 and r.stdout.strip()


def test_user_errors_are_one_line_without_traceback(tmp_path):
    for args in (["ask", "--model", str(tmp_path / "missing.gguf"), "hi"],
                 ["ask", "--backend", "abacus", "hi"],
                 ["bench", "--data", str(tmp_path / "none.jsonl")]):
        r = hexa(*args)
        assert r.returncode == 2, args
        assert "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("hexa: ")


def test_bench_on_two_prompts(tmp_path, capsys):
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
