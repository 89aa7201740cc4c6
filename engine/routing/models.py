"""What the router knows about its endpoints: the device's TTFT as a line in the prompt length
(T_d(l) = k·l + c, fitted from hexa's own prefill), a server's TTFT as an empirical distribution F
(learned from observed TTFTs: DiSCo measured Pearson 0.01-0.04 between a server's TTFT and the
prompt length, so a length-based predictor is no better than the distribution), and per-token prices.
Both are kept in one JSON file in the data folder (``routing.json``)."""
from __future__ import annotations

import bisect
import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import EngineError

MAX_SAMPLES = 2000        # observed TTFTs kept per server (the most recent)


@dataclass(frozen=True)
class DeviceModel:
    """T_d(l) = k·l + c seconds, and the device's decoding rate."""
    k: float                  # seconds per prompt token
    c: float                  # seconds
    decode_tok_s: float
    source: str = ""          # how it was obtained (model, threads, date) or "assumed"

    def ttft(self, length: int) -> float:
        return self.k * length + self.c

    @classmethod
    def fit(cls, points: Sequence[tuple[int, float]], decode_tok_s: float, source: str = "") -> "DeviceModel":
        """Least squares over (prompt tokens, TTFT seconds)."""
        if len({p[0] for p in points}) < 2:
            raise EngineError("fitting the device's TTFT needs at least two prompt lengths")
        n = len(points)
        mx = sum(p[0] for p in points) / n
        my = sum(p[1] for p in points) / n
        sxx = sum((p[0] - mx) ** 2 for p in points)
        k = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx
        return cls(max(k, 0.0), max(my - k * mx, 0.0), decode_tok_s, source)


class ServerTTFT:
    """An empirical TTFT distribution F (seconds): ``cdf``, ``quantile`` (F⁻¹) and ``sample``."""

    def __init__(self, samples: Sequence[float]):
        if not samples:
            raise EngineError("a server TTFT distribution needs at least one observation")
        self.samples = list(samples)[-MAX_SAMPLES:]
        self._sorted = sorted(self.samples)

    def observe(self, ttft: float) -> None:
        self.samples.append(ttft)
        if len(self.samples) > MAX_SAMPLES:
            old = self.samples.pop(0)
            self._sorted.pop(bisect.bisect_left(self._sorted, old))
        bisect.insort(self._sorted, ttft)

    def cdf(self, t: float) -> float:
        return bisect.bisect_right(self._sorted, t) / len(self._sorted)

    def quantile(self, q: float) -> float:
        s = self._sorted
        return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]

    def sample(self, rng: random.Random) -> float:
        return rng.choice(self.samples)

    def mean(self) -> float:
        return sum(self.samples) / len(self.samples)


# Replayed server TTFTs when no trace of the user's own server exists: log-normal bodies with a
# load-spike component, shaped after the DiSCo paper's description of its measured services (TTFT
# medians of a few hundred ms, spikes to several seconds under load, e.g. GPT-4o-mini 0.3 s -> s).
# The paper's raw traces are not public: these parameters are ours, and every table says
# "replayed" when it uses them. (median s, sigma, spike share, spike median s)
REPLAY = {
    "gpt-4o-mini": (0.40, 0.45, 0.04, 2.5),
    "deepseek-v2.5": (0.90, 0.50, 0.05, 4.0),
    "command": (0.35, 0.35, 0.02, 1.5),
    "llama-3-70b": (0.60, 0.40, 0.03, 2.5),
}


def replay_samples(name: str, n: int, seed: int) -> list[float]:
    """``n`` TTFTs drawn from the replay distribution ``name``."""
    if name not in REPLAY:
        raise EngineError(f"unknown TTFT trace {name!r} (known: {', '.join(REPLAY)})")
    median, sigma, spike, spike_median = REPLAY[name]
    rng = random.Random(seed)
    return [rng.lognormvariate(math.log(spike_median if rng.random() < spike else median), sigma)
            for _ in range(n)]


@dataclass(frozen=True)
class Prices:
    """Cost per token (any currency; the device's is its energy priced by the user)."""
    device_in: float = 0.0
    device_out: float = 0.0
    server_in: float = 0.0
    server_out: float = 0.0


# -- persistence -----------------------------------------------------------------------------------
@dataclass
class RoutingState:
    device: DeviceModel | None = None
    servers: dict[str, list[float]] = field(default_factory=dict)   # endpoint name -> observed TTFTs
    lengths: list[int] = field(default_factory=list)                # recent prompt lengths: p(l)

    def server(self, name: str) -> ServerTTFT | None:
        got = self.servers.get(name)
        return ServerTTFT(got) if got else None

    def observe(self, name: str, ttft: float) -> None:
        kept = self.servers.setdefault(name, [])
        kept.append(round(ttft, 4))
        del kept[:-MAX_SAMPLES]


def load_state(path: Path) -> RoutingState:
    try:
        raw = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return RoutingState()
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot read {path}: {exc.__class__.__name__} (delete it to start afresh)") from None
    try:
        dev = raw.get("device")
        return RoutingState(DeviceModel(**dev) if dev else None,
                            {str(k): [float(x) for x in v] for k, v in raw.get("servers", {}).items()},
                            [int(x) for x in raw.get("lengths", [])])
    except (TypeError, ValueError, AttributeError):
        raise EngineError(f"{path}: not a routing file (delete it to start afresh)") from None


def save_state(path: Path, state: RoutingState) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"device": asdict(state.device) if state.device else None,
                               "servers": state.servers, "lengths": state.lengths[-MAX_SAMPLES:], "saved": time.strftime("%Y-%m-%d %H:%M:%S")}))
    tmp.replace(path)
