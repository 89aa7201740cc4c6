"""``hexa bench --turns``: each case's turns in one session; later turns warm (the kept KV prefix)
against the same prompt cold."""
from __future__ import annotations

import io
import json
import sys

import pytest

from engine.bench.data import Case, load_cases
from engine.bench.runner import BenchOptions, format_turns, run_turns, summarize_turns
from engine.errors import EngineError

CASE = Case("chat-1", "chat", "Write two sentences about the moon.",
            ("Write two sentences about the moon.", "Now say the same about the sun."))


def test_cases_carry_every_turn(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps(c) for c in [
        {"id": "a", "task": "chat", "turns": ["one", "two"]}, {"id": "b", "task": "qa", "turns": ["only"]}]))
    a, b = load_cases(data)
    assert (a.prompt, a.turns) == ("one", ("one", "two")) and (b.prompt, b.turns) == ("only", ("only",))
    assert Case("c", "qa", "just the prompt").turns == ("just the prompt",)   # callers that give one turn


def test_turns_needs_multi_turn_cases_and_a_method_that_keeps_a_prefix():
    with pytest.raises(EngineError, match="two or more turns"):
        run_turns(None, [Case("q", "qa", "hi")], BenchOptions(["vanilla"]))
    with pytest.raises(EngineError, match="engine method or llamacpp"):
        run_turns(None, [CASE], BenchOptions(["hf"]), log=io.StringIO())


def test_the_turns_table():
    def row(turn, warm, cold, same=True):
        return {"method": "vanilla", "turn": turn, "prompt_tokens": 90, "warm": {"ttft_s": warm},
                "cold": {"ttft_s": cold}, "ttft_ratio": warm / cold, "reused_tokens": 60, "same_tokens": same}
    rows = [{"method": "vanilla", "turn": 1, "warm": {"ttft_s": 0.3}}, row(2, 0.02, 0.2), row(2, 0.04, 0.2, False)]
    summary = summarize_turns(rows)
    r = summary["vanilla"]["2"]
    assert r["n"] == 2 and r["ttft_ratio"] == pytest.approx(0.15) and r["same_tokens"] == 1
    assert r["new_share"] == pytest.approx(30 / 90) and r["under_target"] == 2   # 10% and 20% alone
    assert r["warm_ttft_ms"] == pytest.approx(30) and r["cold_ttft_ms"] == pytest.approx(200)
    result = {"model": "m", "backend": "torch", "threads": 2, "kernel": "k", "options": {"max_new_tokens": 8},
              "turns": {"summary": summary, "rows": rows}}
    table = format_turns(result)
    assert "warm/cold" in table and "15%" in table and "33%" in table and "2/2" in table and "1/2" in table


def _check(result: dict, method: str) -> None:
    rows = [r for r in result["turns"]["rows"] if r["method"] == method]
    assert [r["turn"] for r in rows] == [1, 2]
    second = rows[1]
    assert second["prompt_tokens"] > rows[0]["prompt_tokens"]
    assert 0 < len(second["warm"]["tokens"]) <= 8
    # the first turn's prompt and its answer were kept: only the new message is prefilled
    first = rows[0]
    assert second["reused_tokens"] >= first["prompt_tokens"] + len(first["warm"]["tokens"]) - 1
    assert second["warm"]["tokens"] == second["cold"]["tokens"]   # and reusing it changes nothing
    assert second["same_tokens"] and result["turns"]["summary"][method]["2"]["same_tokens"] == 1


def test_engine_second_turn_reuses_the_first(engine, capsys):
    result = run_turns(engine, [CASE], BenchOptions(["vanilla"], max_new_tokens=8), log=sys.stderr)
    _check(result, "vanilla")
    with capsys.disabled():
        print("\n" + format_turns(result))


def test_llamacpp_second_turn_reuses_the_first(engine, capsys):
    try:
        import llama_cpp  # noqa: F401
    except Exception as exc:
        pytest.skip(f"llama_cpp is not importable ({exc.__class__.__name__}); `pip install -e .[peers]`")
    result = run_turns(engine, [CASE], BenchOptions(["llamacpp"], max_new_tokens=8), log=sys.stderr)
    _check(result, "llamacpp")
    with capsys.disabled():
        print("\n" + format_turns(result))
