"""``hexa bench``: compare decoding methods on a JSONL prompt set; prints a table, writes JSON."""
from __future__ import annotations

import sys
from pathlib import Path

from . import bench_route
from .. import settings as config


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmark decoding methods on a JSONL prompt set")
    p.add_argument("--data", required=True, type=Path, metavar="FILE", help="JSONL file: {id, task, turns}")
    p.add_argument("--tasks", default=None, metavar="TASK,...", help="comma-separated tasks (default: all)")
    p.add_argument("--n", type=int, default=None, metavar="N", help="prompts per task (default: all)")
    p.add_argument("--max-new-tokens", type=int, default=128, metavar="N")
    p.add_argument("--max-prompt-tokens", type=int, default=1536, metavar="N")
    p.add_argument("--methods", default="vanilla,pld", metavar="METHOD,...",
                   help="comma-separated methods: the engine's, transformers' hf/pld/pld3/pld10, and llamacpp "
                        "(llama.cpp on the same GGUF; `pip install -e .[peers]`); the reference is vanilla, "
                        "else the first. An engine method with @MODE (hexa@summarizer) runs with that mode's "
                        "penalties and the sampling settings on top (docs/sampling.md), compared with vanilla@MODE")
    p.add_argument("--history", action="store_true",
                   help="stream the data set: earlier responses of a task become drafting sources")
    p.add_argument("--turns", action="store_true",
                   help="multi-turn instead: each case's turns in one session; every turn from the second "
                        "runs warm (the kept KV prefix) and cold, comparing TTFT and tokens")
    p.add_argument("--rounds", type=int, default=1, metavar="N",
                   help="run each prompt N times by every method, the order rotated, and keep each "
                        "method's fastest run (a shared host's slow moments land on one method otherwise)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write every figure and output here")
    p.add_argument("--app", action="store_true",
                   help="measure the app instead: each prompt sent in the (headless) app, then given "
                        "to the engine alone on the same ids; compares their decode speed")
    p.add_argument("--child", action="store_true",
                   help="with --app: also through the app with its engine in a `hexa serve` child process "
                        "(engine_process = child), in the same run")
    bench_route.add_flags(p)
    config.add_flags(p.add_argument_group("model"), config.MODEL_FLAGS, top_level=False)
    config.add_flags(p.add_argument_group("penalties and truncation (for METHOD@MODE)"), config.SAMPLING_OPTIONS,
                     top_level=False)
    p.set_defaults(func=cmd_bench, uses_settings=True)


def cmd_bench(args) -> int:
    from engine.bench.data import load_cases
    from engine.bench.runner import BenchOptions, format_table, format_turns, run_bench, run_turns, write_json
    from engine.errors import EngineError

    from ..loading import load_engine

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise EngineError("--methods is empty")
    if args.max_new_tokens < 1 or (args.n is not None and args.n < 1) or args.rounds < 1:
        raise EngineError("--max-new-tokens, --n and --rounds must be positive")
    if args.rounds > 1 and (args.turns or args.app or args.route):
        raise EngineError("--rounds is for the decoding methods' runs (not --turns, --app or --route)")
    tasks = [t.strip() for t in args.tasks.split(",")] if args.tasks else None
    cases = load_cases(args.data, tasks, args.n)
    settings = args.loaded.settings
    if settings.cost_profile and settings.backend != "qnn":
        print(f"hexa: --cost-profile is for the qnn backend: no estimated device times on {settings.backend}",
              file=sys.stderr)
    engine = load_engine(settings, args.locations)
    if args.route:
        return bench_route.bench_route(engine, cases, args)
    if args.app:
        return bench_app(engine, cases, methods, args)
    opts = BenchOptions(methods=methods, max_new_tokens=args.max_new_tokens,
                        max_prompt_tokens=args.max_prompt_tokens, history=args.history,
                        method_options=mode_options(methods, settings), rounds=args.rounds)
    if args.turns:
        result = run_turns(engine, cases, opts)
        print(format_turns(result))
    else:
        result = run_bench(engine, cases, opts)
        print(format_table(result))
    if args.json:
        write_json(result, args.json)
        print(f"hexa: wrote {args.json}", file=sys.stderr)
    return 0


def mode_options(methods: list[str], settings) -> dict[str, dict]:
    """``hexa@summarizer`` -> the summarizer's ``Engine.generate`` options (penalties, top-k, min-p)."""
    from agents.sampling import MODE_PENALTIES, generation_options
    from engine.errors import EngineError

    out = {}
    for m in methods:
        mode = m.partition("@")[2]
        if not mode:
            continue
        if mode not in MODE_PENALTIES:
            raise EngineError(f"unknown mode {mode!r} in --methods {m} (available: {', '.join(MODE_PENALTIES)})")
        out[m] = generation_options(settings, mode)
    return out


def bench_app(engine, cases, methods: list[str], args) -> int:
    import json

    from ..tui import bench

    child = None
    if args.child:
        from ..serve.child import start

        child = start(args.loaded.settings)
    try:
        rows = bench.run(engine, cases, methods, args.max_new_tokens, log=sys.stderr, child=child)
    finally:
        if child is not None:
            child.close()
    print(bench.format_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
        print(f"hexa: wrote {args.json}", file=sys.stderr)
    return 0
