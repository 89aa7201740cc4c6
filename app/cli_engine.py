"""``hexa ask``, ``hexa bench``, ``hexa paths``, ``hexa doctor`` and the shared model options."""
from __future__ import annotations

import argparse
import sys


def add_model_options(parser: argparse.ArgumentParser, top_level: bool = True) -> None:
    """Model options, accepted before or after the subcommand (``hexa --model M ask`` or ``hexa ask --model M``)."""
    g = parser.add_argument_group("model")
    # a subcommand's copy must not reset what was given at the top level
    default = None if top_level else argparse.SUPPRESS
    g.add_argument("--model", default=default,
                   help="GGUF file, Hugging Face folder or hub id (default: embedded SmolLM2-135M-Instruct)")
    g.add_argument("--backend", default=default,
                   help="runtime backend: torch (CPU) or qnn (static graphs on the Hexagon NPU; default: torch)")
    g.add_argument("--context", type=int, default=default,
                   help="context window in tokens (default: 4096 on torch, 1024 on qnn, whose graphs are built for it)")
    g.add_argument("--method", default=default, help="decoding method: vanilla, sam, hexa, hexa-fill, hexa-nocal, hexa-noreuse, hexa-nohist (default: hexa)")
    g.add_argument("--threads", type=int, default=default, help="torch threads (default: all cores)")


def register(sub) -> None:
    ask = sub.add_parser("ask", help="answer one prompt, streamed to stdout")
    ask.add_argument("prompt", nargs="?", help="the question (default: read standard input)")
    ask.add_argument("--system", default=None, help="system prompt")
    ask.add_argument("--max-tokens", type=int, default=256)
    ask.add_argument("--temperature", type=float, default=0.0)
    ask.add_argument("--top-p", type=float, default=1.0)
    ask.add_argument("--seed", type=int, default=None)
    ask.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    add_model_options(ask, top_level=False)
    ask.set_defaults(func=cmd_ask)

    paths = sub.add_parser("paths", help="print the config, data, cache and log folders")
    paths.set_defaults(func=cmd_paths)

    doctor = sub.add_parser("doctor", help="check the model, backends and versions")
    doctor.set_defaults(func=cmd_doctor)

    from . import cli_bench

    bench = cli_bench.register(sub)
    add_model_options(bench, top_level=False)


def load_engine(args, quiet: bool = False):
    from engine import Engine

    def progress(msg: str) -> None:
        if not quiet:
            print(f"hexa: {msg}", file=sys.stderr)

    return Engine.load(args.model, args.cache_dir, backend=args.backend or "torch",
                       threads=args.threads, context_window=getattr(args, "context", None), progress=progress)


def cmd_ask(args) -> int:
    from engine import Done, EngineError, Notice, Text

    prompt = args.prompt
    if prompt is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise EngineError("no prompt: pass one as an argument or on standard input")
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise EngineError("empty prompt")
    engine = load_engine(args, quiet=True)
    messages = ([{"role": "system", "content": args.system}] if args.system else [])
    messages.append({"role": "user", "content": prompt})
    done = None
    for ev in engine.generate(messages, max_new_tokens=args.max_tokens, temperature=args.temperature,
                              top_p=args.top_p, seed=args.seed, stop=args.stop,
                              method=args.method or "hexa"):
        if isinstance(ev, Text):
            sys.stdout.write(ev.delta)
            sys.stdout.flush()
        elif isinstance(ev, Notice):
            print(f"hexa: {ev.message}", file=sys.stderr)
        elif isinstance(ev, Done):
            done = ev
    sys.stdout.write("\n")
    if done is not None:
        print(f"[{done.method}] TTFT {done.ttft_ms:.0f} ms | prefill {done.prefill_tok_s:.1f} tok/s "
              f"({done.prompt_tokens} tok) | decode {done.decode_tok_s:.1f} tok/s ({done.new_tokens} tok, "
              f"{done.mean_accepted:.2f}/step) | stop: {done.stop_reason}", file=sys.stderr)
    return 0


def cmd_paths(args) -> int:
    for name, path in args.locations.items():
        print(f"{name:<7} {path}")
    print(f"{'models':<7} {args.locations.model_cache}")
    return 0


def cmd_doctor(args) -> int:
    from . import doctor

    return doctor.run(args)
