"""``hexa bench --route --live``: the policies against a real server (through the delay proxy, which
adds network latency and replays a TTFT distribution), bounded to a few hundred requests."""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Callable, Sequence
from urllib.parse import urlsplit

from ..errors import EngineError
from .client import Endpoint, ServerClient
from .live import Live
from .models import DeviceModel, Prices, RoutingState, ServerTTFT, replay_samples
from .policy import make_policy, regime
from .proxy import DelayProxy
from .simulate import Row, percentile, reader_gaps

MAX_REQUESTS = 200


@dataclass(frozen=True)
class LiveOptions:
    url: str
    trace: str = "gpt-4o-mini"      # the TTFT distribution the proxy replays ("" : none)
    latency_s: float = 0.02          # one-way network latency the proxy adds
    budget: float = 0.3
    max_new: int = 24
    warmup: int = 10                 # server TTFT observations before routing (F's first samples)
    read_rate: float = 5.0


async def run_live(engine, prompts: Sequence[list[int]], device: DeviceModel, state: RoutingState,
                   prices: Prices, opts: LiveOptions, log: Callable[[str], None]) -> list[Row]:
    parts = urlsplit(opts.url)
    if not parts.hostname or not parts.port:
        raise EngineError(f"--live {opts.url}: expected http://HOST:PORT/v1")
    policies = ("random", "disco")
    if len(prompts) * len(policies) + opts.warmup > MAX_REQUESTS:
        raise EngineError(f"live mode runs at most {MAX_REQUESTS} requests: use --n to pick fewer prompts")
    draws = replay_samples(opts.trace, 5000, seed=3) if opts.trace else None
    proxy = DelayProxy(parts.hostname, parts.port, latency_s=opts.latency_s,
                       ttft=(lambda rng: rng.choice(draws)) if draws else None)
    port = await proxy.start()
    name = f"live:{parts.hostname}:{parts.port}"
    client = ServerClient(Endpoint(name, f"http://127.0.0.1:{port}{parts.path or '/v1'}"))
    rows = []
    try:
        caps = await client.probe(engine.encode)
        log(f"hexa: server tokenizer {'matches' if caps.same_vocab else 'differs'}; "
            f"token-id prompts {'accepted' if caps.ids else 'refused'}: migration by {caps.handover}")
        text = lambda ids: engine.tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
        for i in range(opts.warmup):
            state.observe(name, await client.ttft(text(prompts[i % len(prompts)]), 1))
        fit = state.server(name)
        log(f"hexa: server TTFT learned from {len(fit.samples)} observations: median "
            f"{fit.quantile(0.5):.2f}s, P95 {fit.quantile(0.95):.2f}s")
        lengths = [len(p) for p in prompts]
        reg = regime(prices)
        live = Live(engine, client, caps, device, fit, prices, read_rate=opts.read_rate,
                    expected_out=opts.max_new)
        for pname in policies:
            pol = make_policy(pname, b=opts.budget, lengths=lengths, device=device, server=fit, prices=prices)
            rng = random.Random(0)
            served, decide = [], []
            for ids in prompts:
                t0 = time.perf_counter()
                plan = pol.plan(len(ids), rng)
                decide.append(time.perf_counter() - t0)
                out = await live.serve(ids, plan, opts.max_new, migrate=pname == "disco")
                if out.served_by.startswith("server"):
                    state.observe(name, out.ttft)
                served.append(out)
            side = "device" if reg == "dc" else "server"
            used = sum(len(ids) for ids, o in zip(prompts, served) if side in o.dispatched) / sum(lengths)
            ttfts = [o.ttft for o in served]
            gaps, delayed = [], 0
            for o in served:
                g, d = reader_gaps(o.arrivals, opts.read_rate)
                gaps += g
                delayed += d
            rows.append(Row(pol.name + ("+mig" if pname == "disco" else ""), sum(ttfts) / len(ttfts),
                            percentile(ttfts, 0.99), percentile(gaps, 0.99), used,
                            sum(o.cost(prices) for o in served) / len(served), sum(o.migrated for o in served),
                            delayed, len(served), sum(decide) / len(decide) * 1e6,
                            {"served_by": {k: sum(o.served_by == k for o in served)
                                           for k in sorted({o.served_by for o in served})},
                             "notes": sorted({o.note for o in served if o.note})}))
    finally:
        await client.aclose()
        await proxy.close()
    return rows


def live(engine, prompts, device, state, prices, opts, log) -> list[Row]:
    return asyncio.run(run_live(engine, prompts, device, state, prices, opts, log))
