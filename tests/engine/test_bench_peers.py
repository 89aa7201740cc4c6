"""``hexa bench`` peers: llama.cpp (llama-cpp-python, optional) on the engine's own GGUF, and the
figures every method is reported with (prefill, decode and end-to-end speed, the length cap)."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.bench.data import Case
from engine.bench.methods import make_method
from engine.bench.runner import BenchOptions, format_table, run_bench, summarize
from engine.errors import EngineError


def _llama_cpp_missing() -> str | None:
    try:
        import llama_cpp  # noqa: F401
    except Exception as exc:
        return f"llama_cpp is not importable ({exc.__class__.__name__}); `pip install -e .[peers]` to run this"
    return None


_MISSING = _llama_cpp_missing()
needs_llama_cpp = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def test_llamacpp_without_llama_cpp_is_a_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)   # `import llama_cpp` now fails
    with pytest.raises(EngineError) as err:
        make_method("llamacpp", engine=None)
    message = str(err.value)
    assert "\n" not in message and "pip install -e .[peers]" in message and "cmake" in message


@pytest.mark.parametrize("body, said", [
    ("import os, signal, sys; print('loading', file=sys.stderr, flush=True); os.kill(os.getpid(), signal.SIGSEGV)",
     "killed by SIGSEGV"),
    ("import sys; print('bad model', file=sys.stderr); sys.exit(3)", "exit code 3; last output: bad model"),
])
def test_a_llamacpp_worker_that_dies_says_how(monkeypatch, tmp_path, body, said):
    import engine.bench.llamacpp as peer

    script = tmp_path / "worker.py"
    script.write_text(body)
    monkeypatch.setattr(peer, "WORKER", script)
    worker = peer.Worker()
    try:
        with pytest.raises(EngineError) as err:
            worker.ask("load")
    finally:
        worker.close()
    message = str(err.value)
    assert said in message and "\n" not in message
    assert ("GGML_NATIVE=OFF" in message) == ("SIGSEGV" in said)


def test_llamacpp_runs_the_engines_gguf_only():
    from engine.bench.llamacpp import engine_gguf

    gguf = SimpleNamespace(source=SimpleNamespace(kind="gguf", path=Path("/m/x.gguf")))
    assert engine_gguf(gguf) == Path("/m/x.gguf")
    for engine in (SimpleNamespace(source=SimpleNamespace(kind="folder", path=Path("/m"))), SimpleNamespace()):
        with pytest.raises(EngineError, match="not a GGUF|GGUF the engine loaded") as err:
            engine_gguf(engine)
        assert "\n" not in str(err.value)


def _result(tokens: list[int], seconds: float, ttft: float, prefill: float) -> dict:
    return {"tokens": tokens, "seconds": seconds, "ttft_s": ttft, "steps": max(len(tokens) - 1, 0),
            "accepted_per_step": 1.0, "prefill_ms": prefill * 1000}


def test_the_table_reports_prefill_decode_end_to_end_the_cap_and_llamacpp():
    rows = [{"id": "a", "task": "qa", "prompt_tokens": 100, "results": {
        "vanilla": _result([1, 2, 3, 4], 2.0, 0.5, 0.4), "llamacpp": _result([1, 2, 3, 4, 5], 1.0, 0.2, 0.1)}}]
    for r in rows[0]["results"].values():
        r["matches_reference"] = r["tokens"] == rows[0]["results"]["vanilla"]["tokens"]
    engine = SimpleNamespace(model_name="m", backend_name="torch", threads=2, model=SimpleNamespace(kernel="k"))
    result = summarize(rows, BenchOptions(["vanilla", "llamacpp"], max_new_tokens=4), "vanilla", engine)
    van, peer = result["runs"]["vanilla"]["tasks"]["all"], result["runs"]["llamacpp"]["tasks"]["all"]
    assert van["prefill_tokens_per_s"] == pytest.approx(100 / 0.4)
    assert van["decode_tokens_per_s"] == pytest.approx(3 / 1.5) and van["tokens_per_s"] == pytest.approx(2.0)
    assert van["ttft_ms"] == pytest.approx(500)
    assert (van["over_cap"], van["max_new_tokens"]) == (0, 4)
    assert (peer["over_cap"], peer["max_new_tokens"], peer["mismatches"]) == (1, 5, 1)
    assert van["vs_llamacpp"] == pytest.approx(2.0 / 5.0) and peer["vs_llamacpp"] == 1.0
    table = format_table(result)
    for column in ("prefill tok/s", "TTFT ms", "decode tok/s", "e2e tok/s", "speedup", "vs llama.cpp",
                   "max new/cap", "over cap", "identical", "5/4", "no (1)"):
        assert column in table, column
    del rows[0]["results"]["llamacpp"]
    assert "vs llama.cpp" not in format_table(summarize(rows, BenchOptions(["vanilla"], 4), "vanilla", engine))


@needs_llama_cpp
def test_llamacpp_is_cold_greedy_argmax_and_stops_at_the_cap(engine):
    from engine.bench.data import prompt_ids

    method = make_method("llamacpp", engine)
    assert "AVX2 = 1" in method.info["system_info"] or "NEON" in method.info["system_info"]
    ids = prompt_ids(engine, Case("g", "qa", "Name three colours of the rainbow."), 512)
    first = method.run(ids, 12, [])
    again = method.run(ids, 12, [])
    # cold: the whole prompt is evaluated again, though the previous run left it in the KV cache
    assert again.extra["prompt_evaluated"] == len(ids) and again.extra["reused_tokens"] == 0
    assert again.tokens == first.tokens
    assert 0 < len(first.tokens) <= 12 and not set(first.tokens) & engine.eos_ids
    assert 0 < again.extra["prefill_ms"] / 1000 <= again.ttft_s <= again.seconds
    # greedy: the first token is the argmax of llama.cpp's own logits for the prompt
    assert method.argmax(ids) == first.tokens[0]
    assert method.argmax(ids + first.tokens[:3]) == first.tokens[3]
    # warm (the multi-turn benchmark): the prompt's prefix is reused, the answer is the same
    method.run(ids, 12, [])
    warm = method.run(ids, 12, [], cold=False)
    assert warm.extra["reused_tokens"] == len(ids) - 1 and warm.extra["prompt_evaluated"] <= 1
    assert warm.tokens == first.tokens


@needs_llama_cpp
def test_bench_vanilla_against_llamacpp(engine, capsys):
    cases = [Case("q1", "qa", "What is the boiling point of water at sea level?"),
             Case("q2", "qa", "Give one reason the sky looks blue.")]
    result = run_bench(engine, cases, BenchOptions(["vanilla", "llamacpp"], max_new_tokens=16), log=sys.stderr)
    for method in ("vanilla", "llamacpp"):
        row = result["runs"][method]["tasks"]["all"]
        assert row["n"] == 2 and row["new_tokens"] > 0 and row["over_cap"] == 0 and row["max_new_tokens"] <= 16
        for key in ("tokens_per_s", "prefill_tokens_per_s", "decode_tokens_per_s", "ttft_ms", "vs_llamacpp"):
            assert row[key] > 0, (method, key)
        for prompt in result["prompts"]:
            r = prompt["results"][method]
            assert r["tokens"] and 0 < r["prefill_ms"] / 1000 <= r["ttft_s"] <= r["seconds"]
    # Q4_1 in llama.cpp's arithmetic vs hexa's fp32 dequantized weights: tokens may differ; reported only
    with capsys.disabled():
        print("\n" + format_table(result))
