"""Dispatch policies: for a prompt of ``l`` tokens, when to start the server and when the device
(seconds after the request; None: never). The first endpoint whose first token arrives serves;
the other is cancelled.

DiSCo (Sun, Wang, Lai, ACL Findings 2025), two cost regimes with a budget ``b``:
- device-constrained (the device's energy is the dear part; ``b`` = the share of input tokens the
  device may prefill): always send to the server; start the device after w(l) = 0 for l ≤ l_th,
  else min(β·l, F⁻¹(1 − min(α, b))), β solved so that the device's expected share is b.
- server-constrained (the server's money is the dear part; ``b`` = the share of input tokens sent
  to the server): l_th from ∫₀^l_th l·p(l) dl = (1 − b)·E[l]; shorter prompts on the device only,
  longer ones race both.
The stochastic baselines spend the same budget at random: start the device with probability b
(device-constrained), race the server with probability b (server-constrained).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from ..errors import EngineError
from .models import DeviceModel, Prices, ServerTTFT

POLICIES = ("device", "server", "disco", "disco-dc", "disco-sc", "random-dc", "random-sc")
ALPHA = 0.05        # the device starts by the server's (1 − α) TTFT quantile at the latest
LTH_QUANTILE = 0.5  # device-constrained l_th: prompts the device answers before this server quantile...
LTH_ROOM = 0.5      # ...within this part of the budget the cap leaves


@dataclass(frozen=True)
class Plan:
    server_at: float | None
    device_at: float | None


def regime(prices: Prices) -> str:
    """'dc' when a token costs more on the device than on the server (the device is the budget
    to keep: a free self-hosted server), else 'sc' (a paid API, a device whose energy is free)."""
    device = prices.device_in + prices.device_out
    server = prices.server_in + prices.server_out
    return "dc" if device > server else "sc"


class Policy:
    name = ""

    def plan(self, length: int, rng: random.Random) -> Plan:
        raise NotImplementedError


class DeviceOnly(Policy):
    name = "device"

    def plan(self, length, rng):
        return Plan(None, 0.0)


class ServerOnly(Policy):
    name = "server"

    def plan(self, length, rng):
        return Plan(0.0, None)


class RandomDevice(Policy):
    """Device-constrained baseline: server always, the device too with probability b."""
    name = "random-dc"

    def __init__(self, b: float):
        self.b = b

    def plan(self, length, rng):
        return Plan(0.0, 0.0 if rng.random() < self.b else None)


class RandomServer(Policy):
    """Server-constrained baseline: device always, the server too (a race) with probability b."""
    name = "random-sc"

    def __init__(self, b: float):
        self.b = b

    def plan(self, length, rng):
        return Plan(0.0 if rng.random() < self.b else None, 0.0)


def _mass(lengths: Sequence[int]) -> tuple[list[int], list[float]]:
    """Sorted lengths and the cumulative share of input tokens up to each."""
    s = sorted(lengths)
    total = float(sum(s)) or 1.0
    acc, out = 0, []
    for x in s:
        acc += x
        out.append(acc / total)
    return s, out


def server_split(lengths: Sequence[int], b: float) -> tuple[int, int, float]:
    """(l_th, L, q) on the empirical p(l): ∫₀^l_th l·p(l) dl ≤ (1 − b)·E[l] for the longest l_th;
    L is the next length in the data, and a prompt of exactly L races with probability q, so the
    server's expected share is b even when many prompts have the same length (prompts cut to a
    maximum do)."""
    s, cum = _mass(lengths)
    groups: dict[int, float] = {}                 # length -> cumulative share up to and with it
    for x, c in zip(s, cum):
        groups[x] = c
    th, before = 0, 0.0
    for x, c in groups.items():
        if c <= 1 - b + 1e-12:
            th, before = x, c
        else:
            return th, x, (c - (1 - b)) / (c - before)
    return th, th + 1, 1.0


def server_threshold(lengths: Sequence[int], b: float) -> int:
    return server_split(lengths, b)[0]


class DiscoServer(Policy):
    name = "disco-sc"

    def __init__(self, lengths: Sequence[int], b: float):
        self.b = b
        self.l_th, self.boundary, self.q = server_split(lengths, b)

    def plan(self, length, rng):
        if length <= self.l_th:
            return Plan(None, 0.0)
        race = length > self.boundary or rng.random() < self.q     # the boundary group is split
        return Plan(0.0, 0.0) if race else Plan(None, 0.0)


class DiscoDevice(Policy):
    """Device-constrained DiSCo. Expected device share of input tokens for a wait w(l):
    Σ l·(1 − F(w(l))) / Σ l — the device starts only if the server has not answered by then.
    l_th: the short prompts the device beats the median server on, started at once, limited to
    half the budget the cap leaves (what the cap spends on the rest is min(α, b) of it); β by
    bisection on the decreasing share(β)."""
    name = "disco-dc"

    def __init__(self, lengths: Sequence[int], b: float, device: DeviceModel, server: ServerTTFT,
                 alpha: float = ALPHA):
        if not 0 < b < 1:
            raise EngineError("the budget b must be between 0 and 1")
        self.b, self.server = b, server
        self.cap = server.quantile(1 - min(alpha, b))
        room = max(0.0, (b - min(alpha, b)) / (1 - min(alpha, b))) * LTH_ROOM
        s, cum = _mass(lengths)
        median = server.quantile(LTH_QUANTILE)
        self.l_th = 0
        for x, c in zip(s, cum):
            if c > room or device.ttft(x) > median:
                break
            self.l_th = x
        total = float(sum(s)) or 1.0
        long = [x for x in s if x > self.l_th]
        short_share = sum(x for x in s if x <= self.l_th) / total

        def share(beta: float) -> float:
            return short_share + sum(x * (1 - server.cdf(min(beta * x, self.cap))) for x in long) / total

        lo, hi = 0.0, 1.0
        while share(hi) > b and hi < 1e6:
            hi *= 2
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if share(mid) > b else (lo, mid)
        self.beta = hi
        self.expected_share = share(hi)

    def wait(self, length: int) -> float:
        return 0.0 if length <= self.l_th else min(self.beta * length, self.cap)

    def plan(self, length, rng):
        return Plan(0.0, self.wait(length))


def make_policy(name: str, *, b: float, lengths: Sequence[int], device: DeviceModel, server: ServerTTFT,
                prices: Prices) -> Policy:
    """``disco`` picks its regime from the prices; ``random`` the matching baseline."""
    if name in ("disco", "random"):
        name = f"{name}-{regime(prices)}"
    if name == "device":
        return DeviceOnly()
    if name == "server":
        return ServerOnly()
    if name == "disco-dc":
        return DiscoDevice(lengths, b, device, server)
    if name == "disco-sc":
        return DiscoServer(lengths, b)
    if name == "random-dc":
        return RandomDevice(b)
    if name == "random-sc":
        return RandomServer(b)
    raise EngineError(f"unknown routing policy {name!r} (known: {', '.join(POLICIES)})")
