"""``hexa bench --route``: the router's policies side by side at the same budget (simulated: the
data set's prompt lengths, server TTFTs replayed from a trace, the device's fitted TTFT line)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROUTING_FILE = "routing.json"


def add_flags(p) -> None:
    g = p.add_argument_group("routing (--route)")
    g.add_argument("--route", action="store_true",
                   help="benchmark device/server routing (DiSCo) instead of decoding methods")
    g.add_argument("--budget", default="0.1,0.3,0.5", metavar="B,...",
                   help="comma-separated budgets b: the share of prompt tokens the device (device-constrained) "
                        "or the server (server-constrained) may take")
    g.add_argument("--trace", default="gpt-4o-mini", metavar="NAME|FILE",
                   help="server TTFTs to replay: a built-in distribution (gpt-4o-mini, deepseek-v2.5, command, "
                        "llama-3-70b) or a JSON file with a list of TTFTs in seconds")
    g.add_argument("--live", default=None, metavar="URL",
                   help="live mode: race the device against this OpenAI-compatible server (e.g. "
                        "http://127.0.0.1:8080/v1) through the delay proxy, at the first --budget; "
                        "at most 200 requests")
    g.add_argument("--latency", type=float, default=0.02, metavar="S",
                   help="live: one-way network latency the proxy adds, seconds (default 0.02)")
    g.add_argument("--regime", choices=("sc", "dc"), default="sc",
                   help="live: the prices to route by (sc: a paid server; dc: the device's energy priced)")
    g.add_argument("--refit", action="store_true",
                   help="measure the device's TTFT line again (else the one kept in the data folder)")


def load_trace(spec: str):
    from engine.errors import EngineError
    from engine.routing.models import ServerTTFT, replay_samples

    path = Path(spec)
    if path.suffix == ".json" or path.exists():
        try:
            xs = [float(x) for x in json.loads(path.read_text())]
        except (OSError, ValueError, TypeError):
            raise EngineError(f"{spec}: not a JSON list of TTFTs in seconds") from None
        if len(xs) < 4:
            raise EngineError(f"{spec}: a trace needs at least 4 TTFTs")
        # the router learns F from half the trace and is measured on the other half
        return ServerTTFT(xs[1::2]), ServerTTFT(xs[0::2]), f"server TTFT: replayed from {spec} ({len(xs)} values)"
    return (ServerTTFT(replay_samples(spec, 2000, seed=1)), ServerTTFT(replay_samples(spec, 2000, seed=2)),
            f"server TTFT: replayed from the '{spec}' distribution (engine/routing/models.py REPLAY: shaped "
            f"after the DiSCo paper's description, not its data)")


def device_model(engine, data_dir: Path, refit: bool, log):
    from engine.routing.measure import measure_device
    from engine.routing.models import load_state, save_state

    path = Path(data_dir) / ROUTING_FILE
    state = load_state(path)
    if state.device is None or refit:
        log("hexa: measuring the device's prefill (4 prompt lengths)")
        state.device = measure_device(engine, log=log)
        save_state(path, state)
    return state.device


def bench_route(engine, cases, args) -> int:
    from engine.bench.data import prompt_ids
    from engine.errors import EngineError
    from engine.routing.bench import Setup, answer_lengths, format_table, table

    try:
        budgets = [float(x) for x in args.budget.split(",") if x.strip()]
    except ValueError:
        raise EngineError(f"--budget {args.budget}: expected numbers between 0 and 1") from None
    if not budgets or not all(0 < b < 1 for b in budgets):
        raise EngineError(f"--budget {args.budget}: expected numbers between 0 and 1")
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    device = device_model(engine, args.data_dir, args.refit, log)
    if args.live:
        return bench_live(engine, cases, args, budgets[0], device, log)
    trace, fit, trace_note = load_trace(args.trace)
    lengths = [len(prompt_ids(engine, c, args.max_prompt_tokens)) for c in cases]
    outs = answer_lengths(len(lengths), args.max_new_tokens)
    server_tok_s = 60.0
    setup = Setup(lengths, outs, device, trace, fit, server_tok_s)
    rows = table(setup, budgets)
    provenance = [
        f"prompt lengths: real ({len(lengths)} prompts of {args.data}, {engine.model_name}'s chat template)",
        f"device TTFT: T_d(l) = {device.k * 1000:.3f} ms·l + {device.c * 1000:.0f} ms ({device.source}); "
        f"device decoding {device.decode_tok_s:.0f} tok/s (measured)",
        trace_note, f"server decoding: {server_tok_s:.0f} tok/s (assumed); answer lengths uniform in "
        f"[32, {args.max_new_tokens}] (replayed); reading rate 5 tok/s",
        f"run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"]
    print(format_table(rows, provenance))
    if args.json:
        args.json.write_text(json.dumps([{"regime": r, "b": b, **vars(row)} for r, b, row in rows], indent=2))
        log(f"hexa: wrote {args.json}")
    return 0


def bench_live(engine, cases, args, budget: float, device, log) -> int:
    from engine.bench.data import prompt_ids
    from engine.routing.bench import REGIME_PRICES, format_table
    from engine.routing.livebench import LiveOptions, live
    from engine.routing.models import load_state, save_state

    path = Path(args.data_dir) / ROUTING_FILE
    state = load_state(path)
    prompts = [prompt_ids(engine, c, min(args.max_prompt_tokens, 256)) for c in cases]
    max_new = min(args.max_new_tokens, 32)
    opts = LiveOptions(args.live, args.trace, args.latency, budget, max_new)
    prices = REGIME_PRICES[args.regime]
    rows = live(engine, prompts, device, state, prices, opts, log)
    save_state(path, state)
    provenance = [
        f"real: the device (hexa, {engine.model_name}, {engine.threads} threads) and the server at {args.live}, "
        f"both decoding on this machine's cores; {len(prompts)} prompts of {args.data} (<= 256 tokens), "
        f"answers <= {max_new} tokens, loopback",
        f"replayed: the proxy adds {args.latency * 1000:.0f} ms each way and holds each response until a TTFT "
        f"drawn from '{args.trace}' (the client sees max(real, replayed)); F learned from the observed TTFTs "
        f"(kept in {path})",
        f"prices: {args.regime} ({'a paid server' if args.regime == 'sc' else 'the device energy priced'}); "
        f"P99 over {len(prompts)} requests is their maximum or near it",
        "served by: " + "; ".join(f"{r.policy}: {r.extra['served_by']}" for r in rows),
        f"run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"]
    notes = sorted({n for r in rows for n in r.extra["notes"]})
    provenance += [f"note: {n}" for n in notes]
    print(format_table([(args.regime, budget, r) for r in rows], provenance, kind="live"))
    return 0
