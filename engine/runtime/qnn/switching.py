"""Progressive graph switching (docs/architecture.md, technique 1): when to load each block's decode graphs.

Prefill runs each block on its long graph G1, chunk after chunk; decoding needs the short graphs G2.
Keeping both resident doubles weight memory; loading G2 only after prefill stalls the first decoding
step. So each block's G2 is loaded while other blocks compute, and its G1 is released once G2 is in.
A block switched before prefill ends keeps prefilling with G2 on sub-chunks (same result, slower:
on an NPU a G2 pass costs about as much as a G1 pass), so a block should switch as late as its load
can still be hidden.

``plan`` is the greedy: start with every block switching after its last G1 compute (loads then
hide behind the remaining blocks' computes of the last chunk); while the simulated timeline still
ends with a stall, move one block's switch a chunk earlier, the move that shortens prefill + stall
most; stop when no move helps. ``simulate`` is the timeline both use: one loader, loads served in
the order they are requested, a block that needs its G2 before the load is in waits for it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Costs:
    load_ms: list[float]       # per block: loading its G2 graphs
    g1_ms: list[float]         # per block: one chunk on G1
    g2_ms: list[float]         # per block: the same chunk as G2 sub-chunks


@dataclass(frozen=True)
class Timeline:
    prefill_ms: float          # when the last block finishes the last chunk
    ready_ms: float            # when every block's G2 is loaded and prefill is done
    hidden_ms: float           # load time overlapped with computation
    exposed_ms: float          # ready_ms minus the same prefill with no loading at all

    @property
    def stall_ms(self) -> float:
        return self.ready_ms - self.prefill_ms


def simulate(chunks: int, costs: Costs, switch_after: list[int]) -> Timeline:
    """``switch_after[j]``: block j requests its G2 load right after computing chunk
    ``switch_after[j]`` on G1 (-1: before prefill starts); later chunks run it on G2."""
    n = len(costs.load_ms)
    queue = [(0.0, j) for j in range(n) if switch_after[j] < 0]   # requests, in time order
    done_at: dict[int, float] = {}
    loader_free = 0.0

    def load_until(j: int | None) -> None:
        """Serve requests in order until block j's load is in (None: all of them)."""
        nonlocal loader_free
        while queue and (j is None or j not in done_at):
            at, k = queue.pop(0)
            loader_free = max(loader_free, at) + costs.load_ms[k]
            done_at[k] = loader_free

    t = 0.0
    for c in range(chunks):
        for j in range(n):
            if c > switch_after[j]:
                load_until(j)
                t = max(t, done_at[j]) + costs.g2_ms[j]
            else:
                t += costs.g1_ms[j]
                if c == switch_after[j]:
                    queue.append((t, j))
    load_until(None)
    ready = max([t] + list(done_at.values()))
    exposed = ready - chunks * sum(costs.g1_ms)
    return Timeline(prefill_ms=t, ready_ms=ready,
                    hidden_ms=max(0.0, sum(costs.load_ms) - exposed), exposed_ms=exposed)


def plan(chunks: int, costs: Costs, early: bool = True) -> tuple[list[int], Timeline]:
    """``early=False`` keeps every block on G1 for the whole prefill (only the latest switches)."""
    n = len(costs.load_ms)
    best = [chunks - 1] * n
    timeline = simulate(chunks, costs, best)
    while early and timeline.stall_ms > 0:
        candidates = []
        for j in range(n):
            if best[j] >= 0:
                trial = best.copy()
                trial[j] -= 1
                candidates.append((simulate(chunks, costs, trial).ready_ms, j, trial))
        if not candidates:
            break
        ready, _, trial = min(candidates)
        if ready >= timeline.ready_ms:
            break
        best, timeline = trial, simulate(chunks, costs, trial)
    return best, timeline
