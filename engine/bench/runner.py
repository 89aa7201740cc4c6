"""Run methods over cases, interleaved per prompt, and aggregate per task and overall."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from .data import Case, prompt_ids
from .methods import RunResult, make_method


@dataclass
class BenchOptions:
    methods: list[str]
    max_new_tokens: int = 128
    max_prompt_tokens: int = 1536
    history: bool = False        # earlier responses of the same task become drafting sources
    warmup: bool = True


def run_bench(engine, cases: list[Case], opts: BenchOptions, log=sys.stderr) -> dict:
    runners = {m: make_method(m, engine) for m in opts.methods}
    if opts.warmup:  # first calls pay one-time costs (allocator, kernels); keep them out of the figures
        warm = prompt_ids(engine, cases[0], 64)
        for r in runners.values():
            r.run(warm, 4, [])
    per_prompt: list[dict] = []
    history: dict[str, list[list[int]]] = {}
    reference = opts.methods[0] if "vanilla" not in opts.methods else "vanilla"
    for k, case in enumerate(cases, 1):
        ids = prompt_ids(engine, case, opts.max_prompt_tokens)
        sources = list(history.get(case.task, [])) if opts.history else []
        row = {"id": case.id, "task": case.task, "prompt_tokens": len(ids), "results": {}}
        for name, runner in runners.items():
            res: RunResult = runner.run(ids, opts.max_new_tokens, sources)
            row["results"][name] = {"tokens": res.tokens, "seconds": res.seconds, "ttft_s": res.ttft_s,
                                    "steps": res.steps,
                                    "accepted_per_step": res.accepted_per_step, **res.extra}
        ref_tokens = row["results"][reference]["tokens"]
        for name in runners:
            row["results"][name]["matches_reference"] = row["results"][name]["tokens"] == ref_tokens
        row["text"] = engine.decode(ref_tokens)
        if opts.history:
            history.setdefault(case.task, []).append(ref_tokens)
        per_prompt.append(row)
        times = "  ".join(f"{n} {row['results'][n]['seconds']:.2f}s" for n in runners)
        print(f"[{k}/{len(cases)}] {case.task:<8} {case.id:<14} {len(ids):>5} tok  {times}", file=log, flush=True)
    return summarize(per_prompt, opts, reference, engine)


def summarize(per_prompt: list[dict], opts: BenchOptions, reference: str, engine) -> dict:
    tasks = sorted({r["task"] for r in per_prompt}) + ["all"]
    runs: dict = {}
    for m in opts.methods:
        runs[m] = {"tasks": {}}
        for t in tasks:
            rows = [r for r in per_prompt if t == "all" or r["task"] == t]
            res = [r["results"][m] for r in rows]
            new = sum(len(x["tokens"]) for x in res)
            secs = sum(x["seconds"] for x in res)
            steps = sum(x["steps"] for x in res)
            # tokens per forward pass while decoding (the first token comes from prefill)
            emitted = sum(max(len(x["tokens"]) - 1, 0) for x in res)
            decode_s = sum(x["seconds"] - x["ttft_s"] for x in res)
            runs[m]["tasks"][t] = {"n": len(rows), "new_tokens": new, "seconds": secs,
                                   "tokens_per_s": new / secs if secs else 0.0,
                                   # after the first token: decoding speed without prefill
                                   "decode_tokens_per_s": emitted / decode_s if decode_s > 0 else 0.0,
                                   "accepted_per_step": emitted / steps if steps else 0.0,
                                   "mismatches": sum(not x["matches_reference"] for x in res)}
    for t in tasks:
        base = runs.get("vanilla", runs[reference])["tasks"][t]["tokens_per_s"]
        for m in opts.methods:
            row = runs[m]["tasks"][t]
            row["speedup_vs_vanilla"] = row["tokens_per_s"] / base if base else 0.0
    return {"model": engine.model_name, "backend": engine.backend_name, "threads": engine.threads,
            "kernel": engine.model.kernel, "reference": reference, "options": vars(opts), "runs": runs, "prompts": per_prompt}


def format_table(result: dict) -> str:
    lines = [f"model {result['model']} | backend {result['backend']} | threads {result['threads']} | "
             f"kernel {result.get('kernel', '?')} | max new tokens {result['options']['max_new_tokens']} | reference: {result['reference']}"]
    head = (f"{'task':<8} {'method':<12} {'n':>3} {'new tok':>8} {'seconds':>8} {'tok/s':>7} {'speedup':>8} "
            f"{'decode tok/s':>12} {'acc/step':>9} {'identical':>10}")
    lines += [head, "-" * len(head)]
    tasks = list(next(iter(result["runs"].values()))["tasks"])
    for t in tasks:
        for m, run in result["runs"].items():
            r = run["tasks"][t]
            ident = "yes" if r["mismatches"] == 0 else f"no ({r['mismatches']})"
            lines.append(f"{t:<8} {m:<12} {r['n']:>3} {r['new_tokens']:>8} {r['seconds']:>8.2f} "
                         f"{r['tokens_per_s']:>7.2f} {r['speedup_vs_vanilla']:>7.2f}x {r['decode_tokens_per_s']:>12.2f} "
                         f"{r['accepted_per_step']:>9.2f} {ident:>10}")
    return "\n".join(lines)


def write_json(result: dict, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(path)
