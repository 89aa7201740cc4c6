"""``hexa bench --rounds N``: every method runs each prompt N times, the order rotated each round,
and its fastest run is the one reported; a method whose runs disagree stops the bench."""
from __future__ import annotations

import io
import time

import pytest

import engine.bench.runner as runner_module
from engine.bench.data import Case
from engine.bench.runner import BenchOptions, format_table, run_bench
from engine.errors import EngineError

CASES = [Case("q1", "qa", "What is the boiling point of water at sea level?"),
         Case("q2", "qa", "Give one reason the sky looks blue.")]


def logged_methods(monkeypatch, calls: list, slow: dict | None = None, change: str | None = None):
    """The real engine methods, each run logged as (method, prompt ids' length, seconds); ``slow``
    adds a pause to the given (method, round) runs; ``change`` alters that method's second run."""
    real = runner_module.make_method
    seen: dict[str, int] = {}

    class Logged:
        def __init__(self, name, method):
            self.name, self.method = name, method

        def run(self, ids, max_new, history, *a, **k):
            t0 = time.perf_counter()
            res = self.method.run(ids, max_new, history, *a, **k)
            r = seen[self.name] = seen.get(self.name, 0) + 1
            if slow and (self.name, r) in slow:
                time.sleep(slow[self.name, r])
                res.seconds += slow[self.name, r]
            if change == self.name and r == 2:
                res.tokens = res.tokens[:-1]
            calls.append((self.name, len(ids), res.seconds, time.perf_counter() - t0))
            return res

    monkeypatch.setattr(runner_module, "make_method", lambda name, engine, opts=None: Logged(name, real(name, engine, opts)))


def test_each_method_runs_every_prompt_each_round_in_rotated_order_and_its_fastest_run_counts(engine, monkeypatch):
    calls: list = []
    # vanilla's first run of the first prompt and hexa's second run of it made slow on purpose
    logged_methods(monkeypatch, calls, slow={("vanilla", 1): 0.5, ("hexa", 2): 0.5})
    result = run_bench(engine, CASES, BenchOptions(["vanilla", "hexa"], max_new_tokens=12, rounds=3, warmup=False), log=io.StringIO())
    names = [c[0] for c in calls]
    assert names == ["vanilla", "hexa", "hexa", "vanilla", "vanilla", "hexa"] * 2   # each prompt, 3 rounds rotated
    first = result["prompts"][0]["results"]
    for name in ("vanilla", "hexa"):
        runs = [c[2] for c in calls[:6] if c[0] == name]
        assert first[name]["seconds"] == min(runs) and max(runs) >= 0.5   # the slow run is not the one kept
    assert result["runs"]["hexa"]["tasks"]["all"]["mismatches"] == 0
    assert "fastest of 3 runs each" in format_table(result)


def test_a_method_whose_runs_disagree_stops_the_bench(engine, monkeypatch):
    logged_methods(monkeypatch, [], change="hexa")
    with pytest.raises(EngineError, match="hexa's run 2 of q1 wrote other tokens than its first"):
        run_bench(engine, CASES[:1], BenchOptions(["vanilla", "hexa"], max_new_tokens=12, rounds=2, warmup=False), log=io.StringIO())
