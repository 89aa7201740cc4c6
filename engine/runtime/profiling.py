"""Measure the backend's forward cost by number of tokens fed (the draft-tree sizing cost model).

The cost of one verification pass depends on the tokens fed (n) and, through attention, on the
context already in the KV cache. ``profile_cost_model`` times forward + logits for each n at two
context lengths over a KV cache filled with random entries (attention cost does not depend on
the values, so no prefill is needed) and interpolates linearly in the context length.

A static-shape backend's cost is a staircase over its graph lengths (``profile_static_lengths``).
With a device cost profile (``--cost-profile``) the staircase is ``device_cost_model``: the
profile's graph times, plus the CPU side of a step as measured here (``profile_cpu_side``).
"""
from __future__ import annotations

import time
from bisect import bisect_left
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..files import atomic_write

if TYPE_CHECKING:
    from .qnn.cost_profile import DeviceCostProfile

PROFILE_SIZES = (1, 2, 4, 8, 16, 32)
PROFILE_PAST = (128, 1024)
PROFILE_VERSION = "2"   # how profiles are measured: a new one makes saved profiles be measured again


class CostCurve:
    """Piecewise-linear cost in ms for feeding n tokens; extrapolates from the last segment."""

    def __init__(self, points: list[tuple[int, float]]):
        self.points = sorted(points)
        self.sizes = [n for n, _ in self.points]
        self.thresholds: dict[int, float] = {}   # drafting.tree.pay_threshold's, by budget
        self.tables: dict[int, list[float]] = {}   # drafting.tree.cost_table's, by drafts

    def __call__(self, n: int) -> float:
        pts = self.points
        i = bisect_left(self.sizes, n)
        if i < len(pts) and pts[i][0] == n:
            return pts[i][1]
        if i == 0:
            return pts[0][1]
        if i == len(pts):
            (n0, c0), (n1, c1) = pts[-2], pts[-1]
        else:
            (n0, c0), (n1, c1) = pts[i - 1], pts[i]
        return c0 + (c1 - c0) * (n - n0) / (n1 - n0)

    def as_dict(self) -> dict[int, float]:
        return dict(self.points)


def _monotone(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """A bigger feed never costs less (noise must not invert the ranking)."""
    out = list(points)
    for i in range(1, len(out)):
        out[i] = (out[i][0], max(out[i][1], out[i - 1][1]))
    return out


class CostModel:
    """Cost curves measured at several context lengths; ``at(past)`` interpolates between them.

    Calling the model directly (``model(n)``) uses the shortest profiled context, so it can stand
    in wherever a plain ``CostCurve`` is expected.
    """

    def __init__(self, curves: dict[int, CostCurve]):
        self.curves = dict(sorted(curves.items()))
        self.pasts = list(self.curves)
        self._memo: dict[int, CostCurve] = {}

    def __call__(self, n: int) -> float:
        return self.curves[self.pasts[0]](n)

    def at(self, past: int, bucket: int = 64) -> CostCurve:
        key = max(0, past) // bucket * bucket
        curve = self._memo.get(key)
        if curve is None:
            if len(self.pasts) == 1:
                curve = self.curves[self.pasts[0]]
            else:
                p0, p1 = self.pasts[0], self.pasts[-1]
                c0, c1 = self.curves[p0], self.curves[p1]
                w = (key - p0) / (p1 - p0)          # linear in context, extrapolated past p1
                sizes = sorted(set(c0.sizes) | set(c1.sizes))
                curve = CostCurve(_monotone([(n, max(1e-3, c0(n) + w * (c1(n) - c0(n)))) for n in sizes]))
            self._memo[key] = curve
        return curve

    def as_dict(self) -> dict[int, dict[int, float]]:
        return {p: c.as_dict() for p, c in self.curves.items()}


def profile_cost_curves(model, pasts: tuple[int, ...], repeats: int = 5) -> dict[int, CostCurve]:
    """Time forward + logits for each size over each ``past``-token cache; keep each size's best.

    The sizes and contexts take turns within every round, so a slow moment of a shared machine
    lands on one round of every size rather than on all of one size's: timed one size after
    another (3 repeats each), a profile made while the llama.cpp peer's process was starting put
    the embedded model's 1-row step at 8.1 ms where decoding then took 6.3-7.1, and 32 rows at
    4.9x a step where decoding's took 6.7-7.0x; scaled by the plain steps observed, big trees
    looked 1.3-1.8x cheaper than they were and were chosen (AMX Xeon, 2026-12-03). On a quiet
    host both orders agree (32 rows 6.5-6.7x one size after another, 6.2-6.4x interleaved, three
    profiles each); under heavy load from other tenants the interleaved ones still moved
    (5.3-6.3x), but no longer by one size alone."""
    g = np.random.default_rng(0)
    caches = {}
    for past in pasts:
        cache = model.new_cache(past + max(PROFILE_SIZES) + 1)
        cache.k[...] = g.standard_normal(cache.k.shape, dtype=np.float32)
        cache.v[...] = g.standard_normal(cache.v.shape, dtype=np.float32)
        cache.length = past
        caches[past] = cache
    passes = {(p, n): (g.integers(0, 1000, n, dtype=np.int64), np.arange(p, p + n, dtype=np.int64),
                       np.tri(n, p + n, p, dtype=bool) if n > 1 else None)
              for p in pasts for n in PROFILE_SIZES}   # each pass's inputs, made once
    best = dict.fromkeys(passes, float("inf"))
    for _ in range(repeats):
        for (past, n), (toks, positions, mask) in passes.items():
            t0 = time.perf_counter()
            model.logits(model.forward(toks, positions, caches[past], mask))
            best[past, n] = min(best[past, n], (time.perf_counter() - t0) * 1000)
    return {p: CostCurve(_monotone([(n, best[p, n]) for n in PROFILE_SIZES])) for p in pasts}


def profile_static_lengths(model, repeats: int = 2) -> CostModel:
    """A static-shape backend runs a feed of n tokens on the shortest graph with S >= n, over its
    whole static context: the cost is a staircase over n, the same at every context length."""
    return _time_static_lengths(model, repeats, outside_graphs=False)


def profile_cpu_side(model, repeats: int = 2) -> CostModel:
    """The part of a static-shape step that is not its graphs: ``profile_static_lengths``'s timings
    minus the graph runs and load waits they contain (``model.graphs.ledger``). It is the CPU's
    work on a device too: embedding lookup, the graphs' inputs and KV copies, final norm, output head."""
    return _time_static_lengths(model, repeats, outside_graphs=True)


def _time_static_lengths(model, repeats: int, outside_graphs: bool) -> CostModel:
    lengths = model.decode_lengths
    cache = model.new_cache(model.context)
    cache.length = model.context // 2
    cost = {}
    for S in lengths:
        toks = np.zeros(S, dtype=np.int64)
        pos = np.arange(cache.length, cache.length + S, dtype=np.int64)
        best = float("inf")
        for i in range(repeats + 1):           # the first run warms the graph
            before = model.graphs.ledger.snapshot() if outside_graphs else None
            t0 = time.perf_counter()
            model.logits(model.forward(toks, pos, cache))
            ms = (time.perf_counter() - t0) * 1000
            if outside_graphs:
                spent = model.graphs.ledger.since(before)
                ms = max(1e-3, ms - spent.graph_ms - spent.stall_ms)
            if i:
                best = min(best, ms)
        cost[S] = best
    points = [(n, cost[model.graph_for(n)]) for n in range(1, lengths[-1] + 1)]
    return CostModel({0: CostCurve(_monotone(points))})


def device_cost_model(profile: DeviceCostProfile, n_blocks: int, graph_for: Callable[[int], int],
                      cpu_side: CostModel) -> CostModel:
    """The staircase of a static-shape backend on the profile's device: a feed of n tokens costs
    every block's graph S = ``graph_for(n)`` at the profile's compute_ms, plus ``cpu_side(n)``
    (``profile_cpu_side``: what the device profile does not cover, measured on this machine)."""
    cpu = cpu_side.at(0)             # one curve: a static backend's cost does not depend on the context
    points = [(n, cpu(n) + sum(profile.cost(bi, graph_for(n)).compute_ms for bi in range(n_blocks)))
              for n in cpu.sizes]
    return CostModel({0: CostCurve(_monotone(points))})


def profile_cost_model(model, pasts: tuple[int, ...] = PROFILE_PAST, repeats: int = 5) -> CostModel:
    if model.decode_lengths:             # a static-shape backend
        return profile_static_lengths(model)
    model.logits(model.forward(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                               model.new_cache(2)))          # warm the kernels once
    return CostModel(profile_cost_curves(model, pasts, repeats))


def profile_key(model, model_name: str, threads: int) -> str:
    """What the cost depends on: model, kernel, threads, numpy build and CPU."""
    import hashlib
    import platform

    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    raw = "|".join([PROFILE_VERSION, model_name, model.kernel, model.kernel_build, str(threads),
                    np.__version__, platform.machine(), cpu])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def load_or_profile(model, path, profiler: Callable[..., CostModel] | None = None, **kw) -> CostModel:
    """The saved profile at ``path`` if readable, else a fresh one (then saved; None: not kept).
    Profiling takes a few seconds; without the file every start would add them to the first
    speculative reply. ``OnlineCost`` corrects a saved profile that no longer fits the machine's
    load. ``profiler``: what measures it (default ``profile_cost_model``)."""
    import json

    measure = profiler or profile_cost_model
    if path is None:
        return measure(model, **kw)
    try:
        data = json.loads(path.read_text())
        curves = {int(p): CostCurve([(int(n), float(c)) for n, c in pts.items()]) for p, pts in data.items()}
        if curves and all(len(c.points) >= 2 for c in curves.values()):
            return CostModel(curves)
    except (OSError, ValueError, TypeError, AttributeError):
        pass                                       # missing or damaged: profile again
    model_ = measure(model, **kw)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({str(p): {str(n): c for n, c in pts.items()}
                                       for p, pts in model_.as_dict().items()}))
    except OSError:
        pass                                       # a read-only cache only costs the re-profile
    return model_


class OnlineCost:
    """The profiled ``CostModel`` corrected by the verification times actually observed.

    A warm-up profile can be off by the time decoding runs (other processes on the same cores,
    caches, a longer context, the drafting work between steps): keep an exponential average of
    observed/profiled cost for plain steps (``ratio[0]``), and per bigger size bucket the average
    of its observed ratio *over the plain one* (``_rel``), so that a machine getting slower or
    faster moves every size at once, and the shape learnt for a size stays learnt. A bucket not
    observed for ``STALE`` passes (its trees stopped being chosen) drifts back toward the
    profile's shape, so one unlucky sample cannot ban big trees for good; it is left alone while
    it is being observed. (It used to drift on every pass: with 4–5 plain steps for each
    1-draft one, a 2-token pass learnt half its excess, 1.11× a plain step where 1.25× was
    measured, and drafts that lost time were chosen.) One instance per engine, shared by
    requests and methods (same backend). ``learn=False`` keeps the profile as it is (a device
    cost profile: what this machine observes is not the device's time).
    """

    BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
    STALE = 64
    OVERHEAD_ALPHA = 0.05   # slower than a size's: it is a small part of a step, and noisy

    def __init__(self, model: CostModel, alpha: float = 0.25, relax: float = 0.05, learn: bool = True):
        self.model = model
        self.alpha, self.relax = alpha, relax
        self.learn = learn
        self._plain = 1.0                         # a plain step's observed over profiled cost
        self._rel = [1.0] * len(self.BUCKETS)     # each bigger size's over the plain one ([0] stays 1)
        self._seen = [0] * len(self.BUCKETS)      # passes observed when each bucket last was
        self._passes = 0
        # a step's wall time outside its verification (drafting, emitting): [with no draft, with one]
        self._overhead = [0.0, 0.0]
        self._memo: dict[int, CostCurve] = {}
        self._base: dict[int, list[tuple[int, float, int]]] = {}
        # observations not yet learnt from, in order: (fed, past, ms), or (drafted, -1, ms) for
        # an overhead. Learnt when a cost is next read (a curve: once 8 wait) or 32 wait. Right
        # after a forward pass has flushed the CPU's caches, learning from each as it came
        # cost 0.08-0.10 ms a step (0.016 ms warm), a fifth of what drafting added to a step
        self._todo: list[tuple[int, int, float]] = []
        self._built = [self._plain, *self._rel, *self._overhead]   # the corrections the memoized curves use

    @property
    def ratio(self) -> list[float]:
        """Observed over profiled cost, by size bucket."""
        self._learn()
        return [self._plain * r for r in self._rel]

    def _bucket(self, n: int) -> int:
        return min(bisect_left(self.BUCKETS, n), len(self.BUCKETS) - 1)

    def __call__(self, n: int) -> float:
        self._learn()
        return self.model(n) * self._plain * self._rel[self._bucket(n)]

    def at(self, past: int, bucket: int = 64) -> CostCurve:
        if len(self._todo) >= 8:     # a tree sized on a curve up to 7 observations old: within the noise
            self._learn()
        key = max(0, past) // bucket * bucket
        curve = self._memo.get(key)
        if curve is None:
            points = self._base.get(key)
            if points is None:     # the profile's points at this context: (size, cost, bucket)
                base = self.model.at(past, bucket)
                sizes = sorted(set(base.sizes) | {n for n in self.BUCKETS if n <= base.sizes[-1]})
                points = self._base[key] = [(n, base(n), self._bucket(n)) for n in sizes]
            ratio, (plain, drafted) = self.ratio, self._overhead
            curve = CostCurve(_monotone([(n, c * ratio[b] + (plain if n == 1 else drafted)) for n, c, b in points]))
            self._memo[key] = curve
        return curve

    @property
    def overhead_ms(self) -> float:
        """A step's wall time outside its verification (drafting, emitting), averaged over the
        steps with no draft."""
        self._learn()
        return self._overhead[0]

    @property
    def drafted_overhead_ms(self) -> float:
        """The same over the steps that verified drafts."""
        self._learn()
        return self._overhead[1]

    def observe_overhead(self, ms: float, drafted: bool = False) -> None:
        """The wall time between one verification's end and the next one's start: paid once a
        step whatever its size, so a tree that saves steps saves it too (sizing by verification
        time alone chose trees too small: 0.95-1.0x plain decoding's speed on SmolLM2's chat
        and summary prompts, 1.04-1.17x with it). Kept apart for steps that verify drafts
        (``drafted``): building a tree and learning from it made those 0.7 ms where a step with
        nothing to draft took 0.2-0.3 (the embedded model's qa with --history), so sized with one
        average, 1-draft trees that lost time looked worth it. Capped at a plain step's profiled
        cost (a consumer that paused is not a step's overhead)."""
        if self.learn and ms >= 0:
            self._wait((int(drafted), -1, ms))

    def observe(self, fed: int, past: int, ms: float) -> None:
        """One verification pass fed ``fed`` tokens over ``past`` cached ones and took ``ms``."""
        if self.learn and ms > 0:
            self._wait((fed, past, ms))

    def _wait(self, seen: tuple[int, int, float]) -> None:
        self._todo.append(seen)
        if len(self._todo) >= 32:
            self._learn()

    def _learn(self) -> None:
        """Learn from the waiting observations, in the order they came."""
        if not self._todo:
            return
        todo, self._todo = self._todo, []
        for fed, past, ms in todo:
            if past < 0:
                over = self._overhead
                over[fed] += self.OVERHEAD_ALPHA * (min(ms, self.model(1)) - over[fed])
            else:
                self._learn_pass(fed, past, ms)
        self._moved()

    def _learn_pass(self, fed: int, past: int, ms: float) -> None:
        expected = self.model.at(past)(fed)
        if expected <= 0:
            return
        b = self._bucket(fed)
        r = min(4.0, max(0.25, ms / expected))
        self._passes += 1
        self._seen[b] = self._passes
        if b == 0:
            self._plain += self.alpha * (r - self._plain)
        else:
            self._rel[b] += self.alpha * (r / self._plain - self._rel[b])
        for i in range(1, len(self._rel)):
            if self._passes - self._seen[i] > self.STALE:
                self._rel[i] += self.relax * (1.0 - self._rel[i])

    def _moved(self) -> None:
        """Drop the memoized curves once they have moved by 3% since they were made: a size's
        ratio over the plain one by 3% of itself, an overhead by 3% of a plain step (it is added
        to the curve), the plain ratio by 10% (it scales every size alike, so it moves only the
        overheads' share: what sizing reads is the curve's shape, cost(n) / cost(1)). Rebuilding
        them after every pass cost 0.03 ms a step, for changes within the noise; with every
        correction held to 3% of itself, the curves were rebuilt on 88 of 224 reads (the
        embedded model's qa with --history, 2026-12-03)."""
        step = self.model(1) * self._plain
        now = [self._plain, *self._rel, *self._overhead]
        bounds = [0.1 * self._plain, *(0.03 * r for r in self._rel), 0.03 * step, 0.03 * step]
        if any(abs(a - b) > bound for a, b, bound in zip(now, self._built, bounds)):
            self._memo.clear()
            self._built = now

    def as_dict(self) -> dict:
        return {"profile": self.model.as_dict(), "ratio": dict(zip(self.BUCKETS, (round(r, 3) for r in self.ratio))),
                "overhead_ms": round(self.overhead_ms, 3), "drafted_overhead_ms": round(self.drafted_overhead_ms, 3)}
