"""Trace-driven simulation of the dispatch policies (the DiSCo paper's own evaluation method):
each prompt length is replayed with server TTFTs drawn from a trace, the device's TTFT from its
fitted line, both endpoints' decoding at their rates, and a reader at ``read_rate`` tokens/s."""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Sequence

from .migration import buffer_tokens, worth_migrating
from .models import DeviceModel, Prices, ServerTTFT
from .policy import Policy

MIGRATION_QUANTILE = 0.95   # t_m to the server is unknown in advance: plan the buffer for its P95


@dataclass(frozen=True)
class World:
    device: DeviceModel
    server_trace: ServerTTFT       # what the replay draws real TTFTs from
    server_fit: ServerTTFT         # what the router learned (its F)
    server_tok_s: float
    prices: Prices
    read_rate: float = 5.0


@dataclass
class Outcome:
    ttft: float
    gaps: list[float]              # the reader's time between tokens
    device_in: float = 0.0         # prompt tokens dispatched to each endpoint
    server_in: float = 0.0
    cost: float = 0.0
    migrated: bool = False
    delayed: int = 0               # tokens the reader had to wait for
    served_by: str = ""


def one(world: World, policy: Policy, length: int, n_out: int, expected_out: float, rng: random.Random,
        migrate: bool, s: float, s2: float) -> Outcome:
    """One request; ``s`` its server TTFT, ``s2`` the server's TTFT if it is migrated to it (drawn
    by the caller, so that every policy meets the same server: paired comparisons)."""
    plan = policy.plan(length, rng)
    d = world.device
    inf = math.inf
    srv_first = plan.server_at + s if plan.server_at is not None else inf
    dev_first = plan.device_at + d.ttft(length) if plan.device_at is not None else inf
    first = min(srv_first, dev_first)
    p = world.prices
    out = Outcome(first, [])
    # an endpoint not started by the time the other's first token arrives is never started;
    # a loser's prefill is cut when the winner's first token arrives (its cost: what it did)
    if plan.device_at is not None and plan.device_at < first:
        out.device_in = length
        done = length if dev_first == first else min(length, max(0.0, first - plan.device_at - d.c) / d.k)
        out.cost += p.device_in * done
    if plan.server_at is not None and plan.server_at < first:
        out.server_in = length          # a server bills the prompt it received, answered or not
        out.cost += p.server_in * length
    on_server = srv_first <= dev_first
    out.served_by = "server" if on_server else "device"
    rate = world.server_tok_s if on_server else d.decode_tok_s
    arrivals = [first + j / rate for j in range(n_out)]
    price_out = p.server_out if on_server else p.device_out
    cut = n_out
    if migrate and n_out > 1:
        gap = price_out - (p.device_out if on_server else p.server_out)
        t_est = (d.ttft(length) if on_server else world.server_fit.quantile(MIGRATION_QUANTILE))
        buf = buffer_tokens(world.read_rate, t_est)
        # the handover: the first token at which the source is ``buf`` tokens ahead of the reader
        for g in range(1, n_out):
            read = 1 + (arrivals[g - 1] - first) * world.read_rate
            if g - read >= buf:
                break
        else:
            g = n_out
        overhead = (p.device_in if on_server else p.server_in) * (length + g)
        if g < n_out and worth_migrating(gap, expected_out - g, overhead):
            t_m = d.ttft(length + g) if on_server else s2
            start = arrivals[g - 1] + t_m
            rate2 = d.decode_tok_s if on_server else world.server_tok_s
            arrivals = arrivals[:g] + [start + j / rate2 for j in range(n_out - g)]
            cut, out.migrated = g, True
            out.cost += overhead + (n_out - g) * (p.device_out if on_server else p.server_out)
            out.served_by += "+" + ("device" if on_server else "server")
    out.cost += cut * price_out
    out.gaps, out.delayed = reader_gaps(arrivals, world.read_rate)
    return out


def reader_gaps(arrivals: Sequence[float], read_rate: float) -> tuple[list[float], int]:
    """The reader's time between tokens: it reads one token every 1/read_rate s, or when the
    token arrives if later (then the token counts as delayed)."""
    gaps, delayed = [], 0
    shown = arrivals[0] if arrivals else 0.0
    for a in arrivals[1:]:
        due = shown + 1 / read_rate
        if a > due + 1e-9:
            delayed += 1
        nxt = max(a, due)
        gaps.append(nxt - shown)
        shown = nxt
    return gaps, delayed


def percentile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))] if s else 0.0


@dataclass
class Row:
    policy: str
    mean_ttft: float
    p99_ttft: float
    p99_tbt: float
    budget: float                   # the regime's budget share actually used
    cost: float                     # per request
    migrations: int
    delayed: int
    requests: int
    decision_us: float              # mean time of one dispatch decision
    extra: dict = field(default_factory=dict)


def run(world: World, policy: Policy, lengths: Sequence[int], outs: Sequence[int], *, regime: str,
        migrate: bool = False, repeats: int = 20, seed: int = 0, label: str | None = None) -> Row:
    rng = random.Random(seed)           # the policy's own coin flips
    trace = random.Random(seed + 1)     # the server's TTFTs: the same sequence for every policy
    expected = sum(outs) / len(outs)
    results: list[Outcome] = []
    for _ in range(repeats):
        for length, n in zip(lengths, outs):
            s, s2 = world.server_trace.sample(trace), world.server_trace.sample(trace)
            results.append(one(world, policy, length, n, expected, rng, migrate, s, s2))
    # decision time: the plan alone, over every prompt, on its own clock
    t0 = time.perf_counter()
    for _ in range(20):
        for length in lengths:
            policy.plan(length, rng)
    decision_us = (time.perf_counter() - t0) / (20 * len(lengths)) * 1e6
    total_in = float(sum(lengths)) * repeats
    used = sum(o.device_in if regime == "dc" else o.server_in for o in results) / total_in
    ttfts = [o.ttft for o in results]
    gaps = [g for o in results for g in o.gaps]
    return Row(label or policy.name, sum(ttfts) / len(ttfts), percentile(ttfts, 0.99), percentile(gaps, 0.99),
               used, sum(o.cost for o in results) / len(results), sum(o.migrated for o in results),
               sum(o.delayed for o in results), len(results), decision_us)
