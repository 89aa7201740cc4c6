"""Run methods over cases, interleaved per prompt, and aggregate per task and overall.

With ``rounds`` > 1 every method runs each prompt that many times, the methods' order rotated
each round, and each method's fastest run counts (its figures together: TTFT, prefill, decode):
on a shared host one slow moment otherwise lands on one method (two single-pass runs of the same
code on the AMX Xeon, 2026-12-03: a task's hexa/plain ratio moved by up to 0.15, and the prefill
path the two methods share came to 0.82-1.14x itself between them).

Figures, per task and method (sums over the task's prompts, then one ratio, so long prompts weigh
more than short ones):

- prefill tok/s: prompt tokens / prefill seconds, where prefill is the request's start until the
  prompt's logits are ready (the engine's ``Done.prefill_ms``; llama.cpp: its ``eval`` of the
  prompt; transformers: its time to first token, which has no finer split). Every single-turn run
  starts cold: all its prompt tokens are computed.
- TTFT: mean time from the request's start to the first new token (prefill + first sampling).
- decode tok/s: tokens after the first / (seconds - TTFT): decoding alone.
- e2e tok/s: new tokens / seconds, request start to last token; ``speedup`` divides it by the
  reference's (vanilla's), ``vs llama.cpp`` by llamacpp's when it was run.
- max new / over cap: the most tokens one run produced, and how many runs produced more than
  ``max_new_tokens`` (must be 0).
- identical: the runs whose tokens equal the reference's (llama.cpp's Q4_1 arithmetic differs
  from hexa's fp32 dequantized weights, so it may legitimately differ).
- estimated device seconds (qnn with ``--cost-profile`` only; an estimate, never a measurement):
  each engine run replayed on the device cost profile, its graph runs and graph-load waits priced
  at the device's times and the CPU side kept as measured (``methods.device_estimate``), with
  the e2e tok/s and speedup that follow from it. The table and JSON say which profile, from where.

``run_turns`` is the multi-turn benchmark: each case's user turns in one session, every turn from
the second on also run cold, to measure what the kept KV prefix saves.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path

from ..errors import EngineError
from ..methods import METHODS
from .data import Case, conversation_ids, prompt_ids
from .methods import LLAMACPP, RunResult, make_method

TTFT_TARGET = 0.25   # a warm turn's TTFT should be at most this fraction of the cold one's


@dataclass
class BenchOptions:
    methods: list[str]
    max_new_tokens: int = 128
    max_prompt_tokens: int = 1536
    history: bool = False        # earlier responses of the same task become drafting sources
    warmup: bool = True
    rounds: int = 1              # runs of each prompt by each method, the order rotated; the fastest kept
    method_options: dict = field(default_factory=dict)   # "hexa@summarizer" -> its Engine.generate options


def _warm_up(engine, cases: list[Case], runners: dict) -> None:
    """First calls pay one-time costs (allocator, kernels); keep them out of the figures."""
    warm = prompt_ids(engine, cases[0], 64)
    for r in runners.values():
        r.run(warm, 4, [])


def _figures(res: RunResult) -> dict:
    return {"tokens": res.tokens, "seconds": res.seconds, "ttft_s": res.ttft_s, "steps": res.steps,
            "accepted_per_step": res.accepted_per_step, **res.extra}


def run_bench(engine, cases: list[Case], opts: BenchOptions, log=sys.stderr) -> dict:
    runners = {m: make_method(m, engine, opts.method_options.get(m)) for m in opts.methods}
    if opts.warmup:
        _warm_up(engine, cases, runners)
    per_prompt: list[dict] = []
    history: dict[str, list[list[int]]] = {}
    reference = opts.methods[0] if "vanilla" not in opts.methods else "vanilla"
    for k, case in enumerate(cases, 1):
        ids = prompt_ids(engine, case, opts.max_prompt_tokens)
        sources = list(history.get(case.task, [])) if opts.history else []
        row = {"id": case.id, "task": case.task, "prompt_tokens": len(ids), "results": {}}
        names = list(runners)
        for r in range(opts.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                # cold: an engine method first forgets the prefixes earlier runs left (forget_prefixes)
                run = _figures(runners[name].run(ids, opts.max_new_tokens, sources))
                row["results"][name] = _faster(row["results"].get(name), run, f"{name}'s run {r + 1} of {case.id}")
        ref_tokens = row["results"][reference]["tokens"]
        for name in runners:
            # "hexa@x" is compared with "vanilla@x" when it runs: the same options, plain decoding
            ref = _reference_for(name, reference, runners)
            row["results"][name]["matches_reference"] = row["results"][name]["tokens"] == row["results"][ref]["tokens"]
            row["results"][name]["repeated_8gram"] = has_repeated_ngram(engine.decode(row["results"][name]["tokens"]))
        row["text"] = engine.decode(ref_tokens)
        if opts.history:
            history.setdefault(case.task, []).append(ref_tokens)
        per_prompt.append(row)
        times = "  ".join(f"{n} {row['results'][n]['seconds']:.2f}s" for n in runners)
        print(f"[{k}/{len(cases)}] {case.task:<8} {case.id:<14} {len(ids):>5} tok  {times}", file=log, flush=True)
    result = summarize(per_prompt, opts, reference, engine)
    return _with_device_note(_with_peer_info(result, runners), engine)


def _faster(kept: dict | None, run: dict, what: str) -> dict:
    """The faster of a method's runs of one prompt so far (``--rounds``: a shared host's slow
    moments add time, never take it away). Every run must write the same tokens."""
    if kept is None:
        return run
    if kept["tokens"] != run["tokens"]:
        raise EngineError(f"bench: {what} wrote other tokens than its first")
    return run if run["seconds"] < kept["seconds"] else kept


def _reference_for(name: str, reference: str, runners: dict) -> str:
    suffix = name.partition("@")[2]
    return f"vanilla@{suffix}" if suffix and f"vanilla@{suffix}" in runners else reference


def has_repeated_ngram(text: str, n: int = 8) -> bool:
    """Whether some n words (lowercased, split on whitespace) occur twice in ``text``: a loop."""
    words = text.lower().split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return len(set(grams)) < len(grams)


def _with_device_note(result: dict, engine) -> dict:
    """Name the device cost profile the estimated device times come from (if any)."""
    profile = engine.cost_profile
    if profile is not None:
        result["device_estimate"] = {
            "device": profile.device, "chipset": profile.chipset, "source": profile.source,
            "what": "estimated, not measured: each run's graph runs priced at the profile's compute_ms, "
                    "its graph-load waits on the profile's load and compute times, the CPU side as measured"}
    return result


def _with_peer_info(result: dict, runners: dict) -> dict:
    if LLAMACPP in runners:   # how llama.cpp was built and run (its CPU features, context size)
        result["llamacpp"] = dict(runners[LLAMACPP].info)
    return result


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else 0.0


def summarize(per_prompt: list[dict], opts: BenchOptions, reference: str, engine) -> dict:
    tasks = sorted({r["task"] for r in per_prompt}) + ["all"]
    cap = opts.max_new_tokens
    runs: dict = {}
    for m in opts.methods:
        runs[m] = {"tasks": {}}
        for t in tasks:
            rows = [r for r in per_prompt if t == "all" or r["task"] == t]
            res = [r["results"][m] for r in rows]
            prompt = sum(r["prompt_tokens"] for r in rows)
            new = sum(len(x["tokens"]) for x in res)
            secs = sum(x["seconds"] for x in res)
            steps = sum(x["steps"] for x in res)
            # the prompt's logits ready (see the module's doc); the TTFT where no finer split exists
            prefill_s = sum(x.get("prefill_ms", x["ttft_s"] * 1000) / 1000 for x in res)
            # tokens per forward pass while decoding (the first token comes from prefill)
            emitted = sum(max(len(x["tokens"]) - 1, 0) for x in res)
            decode_s = sum(x["seconds"] - x["ttft_s"] for x in res)
            runs[m]["tasks"][t] = {"n": len(rows), "prompt_tokens": prompt, "new_tokens": new, "seconds": secs,
                                   "tokens_per_s": _ratio(new, secs),
                                   "prefill_tokens_per_s": _ratio(prompt, prefill_s),
                                   "ttft_ms": 1000 * sum(x["ttft_s"] for x in res) / max(len(res), 1),
                                   # after the first token: decoding speed without prefill
                                   "decode_tokens_per_s": _ratio(emitted, decode_s),
                                   "accepted_per_step": _ratio(emitted, steps),
                                   "max_new_tokens": max((len(x["tokens"]) for x in res), default=0),
                                   "over_cap": sum(len(x["tokens"]) > cap for x in res),
                                   "mismatches": sum(not x["matches_reference"] for x in res),
                                   "repeated_8gram": sum(x.get("repeated_8gram", False) for x in res)}
            if res and all("estimated_device_seconds" in x for x in res):
                device_s = sum(x["estimated_device_seconds"] for x in res)
                runs[m]["tasks"][t].update(estimated_device_seconds=device_s,
                                           estimated_device_tokens_per_s=_ratio(new, device_s))
    for t in tasks:
        base = runs.get("vanilla", runs[reference])["tasks"][t]["tokens_per_s"]
        base_device = runs.get("vanilla", runs[reference])["tasks"][t].get("estimated_device_tokens_per_s")
        peer = runs[LLAMACPP]["tasks"][t]["tokens_per_s"] if LLAMACPP in runs else None
        for m in opts.methods:
            row = runs[m]["tasks"][t]
            row["speedup_vs_vanilla"] = _ratio(row["tokens_per_s"], base)
            if "estimated_device_tokens_per_s" in row and base_device:
                row["estimated_device_speedup_vs_vanilla"] = _ratio(row["estimated_device_tokens_per_s"], base_device)
            if peer is not None:
                row["vs_llamacpp"] = _ratio(row["tokens_per_s"], peer)
    return {**_header(engine, opts), "reference": reference, "runs": runs, "prompts": per_prompt}


def _header(engine, opts: BenchOptions) -> dict:
    return {"model": engine.model_name, "backend": engine.backend_name, "threads": engine.threads,
            "kernel": engine.model.kernel, "options": {**vars(opts), "method_options": {
                m: {k: asdict(v) if is_dataclass(v) else v for k, v in o.items()}
                for m, o in opts.method_options.items()}}}


def _title(result: dict) -> str:
    return (f"model {result['model']} | backend {result['backend']} | threads {result['threads']} | "
            f"kernel {result.get('kernel', '?')} | max new tokens {result['options']['max_new_tokens']}"
            + (f" | fastest of {rounds} runs each" if (rounds := result["options"].get("rounds", 1)) > 1 else ""))


def _rule(head: str) -> list[str]:
    return [head, "-" * len(head)]


def format_table(result: dict) -> str:
    """Two tables: speed, then outputs (length cap, agreement with the reference)."""
    cap = result["options"]["max_new_tokens"]
    runs = result["runs"]
    peer = LLAMACPP in runs
    tasks = list(next(iter(runs.values()))["tasks"])
    lines = [_title(result) + f" | reference: {result['reference']}", ""]
    lines += _rule(f"{'task':<8} {'method':<12} {'n':>3} {'prompt tok':>10} {'prefill tok/s':>13} {'TTFT ms':>8} "
                   f"{'decode tok/s':>12} {'e2e tok/s':>9} {'speedup':>8}" + (f" {'vs llama.cpp':>12}" if peer else ""))
    for t in tasks:
        for m, run in runs.items():
            r = run["tasks"][t]
            lines.append(f"{t:<8} {m:<12} {r['n']:>3} {r['prompt_tokens']:>10} {r['prefill_tokens_per_s']:>13.1f} "
                         f"{r['ttft_ms']:>8.1f} {r['decode_tokens_per_s']:>12.2f} {r['tokens_per_s']:>9.2f} "
                         f"{r['speedup_vs_vanilla']:>7.2f}x" + (f" {r['vs_llamacpp']:>11.2f}x" if peer else ""))
    lines.append("")
    lines += _rule(f"{'task':<8} {'method':<12} {'new tok':>8} {'seconds':>8} {'acc/step':>9} "
                   f"{'max new/cap':>11} {'over cap':>8} {'identical':>10} {'repeat 8g':>9}")
    for t in tasks:
        for m, run in runs.items():
            r = run["tasks"][t]
            ident = "yes" if r["mismatches"] == 0 else f"no ({r['mismatches']})"
            most = f"{r['max_new_tokens']}/{cap}"
            lines.append(f"{t:<8} {m:<12} {r['new_tokens']:>8} {r['seconds']:>8.2f} {r['accepted_per_step']:>9.2f} "
                         f"{most:>11} {r['over_cap']:>8} {ident:>10} {r.get('repeated_8gram', 0):>4}/{r['n']:<4}")
    if "device_estimate" in result:
        lines += [""] + _device_table(result)
    return "\n".join(lines)


def _device_table(result: dict) -> list[str]:
    """Measured wall time beside the estimated device time, per task and engine method."""
    note = result["device_estimate"]
    lines = _rule(f"{'task':<8} {'method':<12} {'wall s':>8} {'est. device s*':>14} {'est. device tok/s*':>18} "
                  f"{'est. speedup*':>13}")
    for t in next(iter(result["runs"].values()))["tasks"]:
        for m, run in result["runs"].items():
            r = run["tasks"][t]
            if "estimated_device_seconds" not in r:
                continue                        # a peer (transformers, llama.cpp) runs no device graphs
            speedup = r.get("estimated_device_speedup_vs_vanilla")
            lines.append(f"{t:<8} {m:<12} {r['seconds']:>8.2f} {r['estimated_device_seconds']:>14.2f} "
                         f"{r['estimated_device_tokens_per_s']:>18.2f} "
                         + (f"{speedup:>12.2f}x" if speedup is not None else f"{'-':>13}"))
    chip = f" ({note['chipset']})" if note["chipset"] else ""
    lines.append(f"* {note['what']}. Device cost profile: {note['device']}{chip}; source: {note['source'] or '?'}")
    return lines


# ---- multi-turn: what the kept KV prefix saves

def can_keep_prefix(method: str) -> bool:
    """Methods whose runs can continue from the previous request's KV cache (the engine's kept
    prefixes, llama.cpp's prefix match); transformers' ``generate`` starts from nothing."""
    return method.partition("@")[0] in METHODS or method == LLAMACPP


def run_turns(engine, cases: list[Case], opts: BenchOptions, log=sys.stderr) -> dict:
    """Each case's user turns in order in one session: ``[user 1]`` -> answer 1 -> ``[user 1,
    answer 1, user 2]`` -> ... Turn 1 starts cold; every later turn runs warm (whatever the previous
    turn left), then the same prompt again cold, to compare their TTFT and tokens."""
    multi = [c for c in cases if len(c.turns) >= 2]
    if not multi:
        raise EngineError("--turns needs cases with two or more turns (every selected case has one; "
                          "try --tasks chat)")
    if len(multi) < len(cases):
        print(f"hexa: --turns: skipping {len(cases) - len(multi)} single-turn case(s)", file=log)
    for m in opts.methods:
        if not can_keep_prefix(m):
            print(f"hexa: --turns: skipping {m} (it keeps no KV cache across requests)", file=log)
    kept = [m for m in opts.methods if can_keep_prefix(m)]
    if not kept:
        raise EngineError("--turns needs an engine method or llamacpp in --methods")
    runners = {m: make_method(m, engine, opts.method_options.get(m)) for m in kept}
    if opts.warmup:
        _warm_up(engine, multi, runners)
    rows: list[dict] = []
    for k, case in enumerate(multi, 1):
        for name, runner in runners.items():
            earlier: list[dict] = []
            for turn, user in enumerate(case.turns, 1):
                ids = conversation_ids(engine, earlier, user, opts.max_prompt_tokens)
                # turn 1 starts a new session; every turn keeps its prompt + answer for the next
                warm = runner.run(ids, opts.max_new_tokens, [], cold=(turn == 1), session=True)
                row = {"id": case.id, "task": case.task, "method": name, "turn": turn, "prompt_tokens": len(ids),
                       "warm": _figures(warm)}
                if turn >= 2:
                    # kept too, so the next turn continues from it (its tokens are the warm run's)
                    cold = runner.run(ids, opts.max_new_tokens, [], cold=True, session=True)
                    row.update(cold=_figures(cold), ttft_ratio=_ratio(warm.ttft_s, cold.ttft_s),
                               reused_tokens=warm.extra.get("reused_tokens", 0),
                               same_tokens=warm.tokens == cold.tokens)
                    print(f"[{k}/{len(multi)}] {case.id:<14} {name:<10} turn {turn} {len(ids):>5} tok  "
                          f"TTFT warm {warm.ttft_s * 1000:.1f} ms, cold {cold.ttft_s * 1000:.1f} ms, "
                          f"reused {row['reused_tokens']}", file=log, flush=True)
                rows.append(row)
                earlier += [{"role": "user", "content": user},
                            {"role": "assistant", "content": engine.decode(warm.tokens)}]
    return _with_device_note(_with_peer_info(
        {**_header(engine, opts), "turns": {"summary": summarize_turns(rows), "rows": rows}}, runners), engine)


def summarize_turns(rows: list[dict]) -> dict:
    """Per method and turn number (from 2): means of the warm and cold TTFT, their ratio (of the
    sums), mean reused tokens, the share of prompt tokens left to prefill (the ratio's floor when a
    token costs the same warm or cold: the new message must be prefilled), how many turns met the
    TTFT target alone, and how many warm runs gave the cold run's tokens."""
    out: dict = {}
    for r in rows:
        if r["turn"] < 2:
            continue
        out.setdefault(r["method"], {}).setdefault(str(r["turn"]), []).append(r)
    summary: dict = {}
    for m, by_turn in out.items():
        summary[m] = {}
        for turn, rs in by_turn.items():
            warm = sum(r["warm"]["ttft_s"] for r in rs)
            cold = sum(r["cold"]["ttft_s"] for r in rs)
            summary[m][turn] = {"n": len(rs), "prompt_tokens": sum(r["prompt_tokens"] for r in rs) / len(rs),
                                "warm_ttft_ms": 1000 * warm / len(rs), "cold_ttft_ms": 1000 * cold / len(rs),
                                "ttft_ratio": _ratio(warm, cold),
                                "reused_tokens": sum(r["reused_tokens"] for r in rs) / len(rs),
                                "new_share": _ratio(sum(r["prompt_tokens"] - r["reused_tokens"] for r in rs),
                                                    sum(r["prompt_tokens"] for r in rs)),
                                "under_target": sum(r["ttft_ratio"] <= TTFT_TARGET for r in rs),
                                "same_tokens": sum(r["same_tokens"] for r in rs)}
    return summary


def format_turns(result: dict) -> str:
    lines = [_title(result) + " | multi-turn: warm = the session's kept prefix, cold = from nothing", ""]
    target = "<=" + format(TTFT_TARGET, ".0%")
    lines += _rule(f"{'method':<12} {'turn':>4} {'n':>3} {'prompt tok':>10} {'reused tok':>10} {'new %':>7} "
                   f"{'warm TTFT ms':>12} {'cold TTFT ms':>12} {'warm/cold':>9} {target:>6} {'same tokens':>11}")
    for m, by_turn in result["turns"]["summary"].items():
        for turn, r in by_turn.items():
            lines.append(f"{m:<12} {turn:>4} {r['n']:>3} {r['prompt_tokens']:>10.0f} {r['reused_tokens']:>10.0f} "
                         f"{r['new_share']:>7.0%} {r['warm_ttft_ms']:>12.1f} {r['cold_ttft_ms']:>12.1f} "
                         f"{r['ttft_ratio']:>9.0%} {r['under_target']:>3}/{r['n']:<2} {r['same_tokens']:>9}/{r['n']}")
    lines += ["", f"new %: the share of prompt tokens prefilled warm (the new message), warm/cold's floor; "
              f"{target}: turns whose own warm/cold met it"]
    return "\n".join(lines)


def write_json(result: dict, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(path)
