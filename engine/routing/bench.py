"""``hexa bench --route``, simulated: every policy at the same budget over the data set's prompt
lengths, server TTFTs replayed from a trace, the device's TTFT from its fitted line."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from .models import DeviceModel, Prices, ServerTTFT
from .policy import make_policy
from .simulate import Row, World, run

# Prices per token for the two regimes the table shows (any currency): a paid API (GPT-4o-mini's
# list price, $0.15 / $0.60 per million input / output tokens) with the device's energy taken as
# free -> server-constrained; a free self-hosted server with the device's energy priced -> device-
# constrained. A user's own prices (settings) pick one of the two.
REGIME_PRICES = {"sc": Prices(server_in=0.15e-6, server_out=0.60e-6),
                 "dc": Prices(device_in=0.1e-6, device_out=1.0e-6)}


@dataclass(frozen=True)
class Setup:
    lengths: list[int]
    outs: list[int]
    device: DeviceModel
    trace: ServerTTFT          # replayed
    fit: ServerTTFT            # the router's learned F (a separate draw / the user's observations)
    server_tok_s: float
    read_rate: float = 5.0


def answer_lengths(n: int, max_new: int, seed: int = 0) -> list[int]:
    """Answer lengths, uniform in [32, max_new] (replayed: the table says so)."""
    rng = random.Random(seed)
    return [rng.randint(min(32, max_new), max_new) for _ in range(n)]


def table(setup: Setup, budgets: Sequence[float], regimes: Sequence[str] = ("dc", "sc"),
          repeats: int = 50) -> list[tuple[str, float, Row]]:
    """(regime, b, row) for: the stochastic baseline, DiSCo, DiSCo with migration; and once per
    regime the device-only and server-only references."""
    out = []
    for regime in regimes:
        prices = REGIME_PRICES[regime]
        world = World(setup.device, setup.trace, setup.fit, setup.server_tok_s, prices, setup.read_rate)
        common = dict(lengths=setup.lengths, device=setup.device, server=setup.fit, prices=prices)
        for name in ("device", "server"):
            out.append((regime, float("nan"), run(world, make_policy(name, b=0.5, **common), setup.lengths,
                                                  setup.outs, regime=regime, repeats=repeats)))
        for b in budgets:
            base = make_policy("random", b=b, **common)
            disco = make_policy("disco", b=b, **common)
            out.append((regime, b, run(world, base, setup.lengths, setup.outs, regime=regime, repeats=repeats)))
            out.append((regime, b, run(world, disco, setup.lengths, setup.outs, regime=regime, repeats=repeats)))
            out.append((regime, b, run(world, disco, setup.lengths, setup.outs, regime=regime, repeats=repeats,
                                       migrate=True, label=disco.name + "+mig")))
    return out


def format_table(rows: list[tuple[str, float, Row]], provenance: Sequence[str], kind: str = "simulated") -> str:
    head = (f"{'regime':6} {'b':>4} {'policy':13} {'mean TTFT':>9} {'P99 TTFT':>8} {'vs random':>9} "
            f"{'P99 TBT':>7} {'budget':>6} {'cost/1k req':>11} {'migr':>5} {'delayed':>7} {'decide':>7}")
    lines = [head, "-" * len(head)]
    base: dict[tuple[str, float], Row] = {}
    for regime, b, r in rows:
        if r.policy.startswith("random"):
            base[(regime, b)] = r
        ref = base.get((regime, b))
        vs = (f"{(r.p99_ttft / ref.p99_ttft - 1) * 100:+.0f}%" if ref and r is not ref else "")
        bs = "" if b != b else f"{b:.2f}"
        lines.append(f"{regime:6} {bs:>4} {r.policy:13} {r.mean_ttft:8.3f}s {r.p99_ttft:7.3f}s {vs:>9} "
                     f"{r.p99_tbt:6.3f}s {r.budget:6.3f} {r.cost * 1000:11.5f} {r.migrations:5d} "
                     f"{r.delayed:7d} {r.decision_us:5.1f}µs")
    n = rows[0][2].requests if rows else 0
    lines.append(f"{n} {kind} requests per row; budget = share of prompt tokens dispatched to the device "
                 f"(dc) / the server (sc); P99 TBT as read at the reading rate; 'decide' = one dispatch decision")
    lines += [f"  {p}" for p in provenance]
    return "\n".join(lines)
