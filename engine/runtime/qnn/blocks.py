"""Which compiled graphs each layer block holds, and progressive switching between them.

Every graph is compiled (and cached) at start-up. With ``progressive`` on, a block holds one graph
family at a time: G1 (prefill) or G2 (the decoding lengths). ``begin_prefill`` plans when each
block's G2 is loaded during the coming prefill (``switching.plan``); loads run on a background
thread while other blocks compute; a block's G1 is released right after its last G1 chunk. With ``progressive``
off, every graph stays loaded (twice the weight memory, no loads during requests).

With a device cost profile (``cost_profile.DeviceCostProfile``) the switching plan uses the
device's compute and load times, and ``ledger`` prices every graph run and load wait both as
measured here and as on that device (the bench's estimated device time).
"""
from __future__ import annotations

import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import astuple, dataclass, replace
from pathlib import Path
from typing import Callable

from .cost_profile import DeviceCostProfile
from .session import GraphSession, load_graph
from .switching import Costs, Timeline, plan


@dataclass
class SwitchStatus:
    switched: int = 0          # blocks already on G2
    total: int = 0
    exposed_ms: float = 0.0    # time this request waited for graph loads


@dataclass
class GraphLedger:
    """Running totals of what the graphs cost, measured here and priced on a device cost profile
    (the device figures stay 0 without one). Take ``snapshot()`` before a run, ``since`` after."""
    runs: int = 0
    graph_ms: float = 0.0            # measured: graph runs (on x86, Qualcomm's emulator)
    stall_ms: float = 0.0            # measured: waiting for graph loads
    device_graph_ms: float = 0.0     # the same runs at the profile's compute_ms
    device_stall_ms: float = 0.0     # the same loads' waits on the profile's load/compute timeline

    def snapshot(self) -> "GraphLedger":
        return replace(self)

    def since(self, earlier: "GraphLedger") -> "GraphLedger":
        return GraphLedger(*(a - b for a, b in zip(astuple(self), astuple(earlier))))

    def estimate_ms(self, wall_ms: float) -> float:
        """A run's ``wall_ms`` with its graph runs and load waits replaced by the device's; the
        CPU side (embedding, output head, drafting, sampling, feeding the graphs) stays as measured."""
        return wall_ms - self.graph_ms - self.stall_ms + self.device_graph_ms + self.device_stall_ms


class BlockGraphs:
    def __init__(self, paths: dict[tuple[int, int], Path], builders: dict[tuple[int, int], Callable],
                 n_blocks: int, prefill_length: int, decode_lengths: tuple[int, ...], progressive: bool,
                 progress: Callable[[str], None] | None = None, cost_profile: DeviceCostProfile | None = None,
                 early: bool = False):
        self.paths = paths
        self.builders = builders
        self.n = n_blocks
        self.g1_len = prefill_length
        self.g2_lens = decode_lengths
        self.progressive = progressive
        # Switching a block before its last prefill chunk runs that chunk on G2 sub-chunks. On the
        # HTP that is not bit-identical to one G1 run (measured: hidden states differ by up to 0.1),
        # and the plan depends on measured times, so the same prompt could prefill differently from
        # one request to the next and greedy outputs would differ. Off unless the qnn.early_switch option.
        self.early = early
        self.load_ms: dict[tuple[int, int], float] = {}
        self.run_ms: dict[tuple[int, int], float] = {}     # per (block, S): moving average of one run
        self.device = cost_profile     # plan with its times instead of load_ms/run_ms, price the ledger
        self.ledger = GraphLedger()
        self._device_pending = 0.0     # the device's wait for G2 loads after the prefill planned last
        self.g1: list[GraphSession | None] = [None] * n_blocks
        self.g2: list[dict[int, GraphSession] | None] = [None] * n_blocks
        self._loading: list[Future | None] = [None] * n_blocks
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="hexa-qnn-load")
        self.switch_after: list[int] | None = None
        self.chunk = 0
        self._exposed_ms = 0.0
        total = len(paths)
        for i, (key, path) in enumerate(sorted(paths.items(), key=lambda kv: (kv[0][1], kv[0][0]))):
            if progress and not path.is_file():
                progress(f"compiling QNN graph {i + 1}/{total} (block {key[0] + 1}/{n_blocks}, S={key[1]})")
            g = load_graph(path, builders[key])
            self.load_ms[key] = g.load_ms
            bi, S = key
            if S == prefill_length:
                self.g1[bi] = g
            elif not progressive:
                self.g2[bi] = {**(self.g2[bi] or {}), S: g}
            # progressive: decode graphs are compiled and measured now, loaded when switching

    # ---- what a run may use
    def session(self, bi: int, S: int) -> GraphSession:
        if S == self.g1_len:
            return self.g1[bi]
        return self.g2[bi][S]

    def has_g1(self, bi: int) -> bool:
        return self.g1[bi] is not None

    def note_run(self, bi: int, S: int, ms: float) -> None:
        prev = self.run_ms.get((bi, S))
        self.run_ms[(bi, S)] = ms if prev is None else prev + 0.3 * (ms - prev)
        self.ledger.runs += 1
        self.ledger.graph_ms += ms
        if self.device is not None:
            self.ledger.device_graph_ms += self.device.cost(bi, S).compute_ms

    def _waited(self, ms: float) -> None:
        self._exposed_ms += ms
        self.ledger.stall_ms += ms

    # ---- switching
    def _load_g2(self, bi: int) -> dict[int, GraphSession]:
        return {S: self._load((bi, S)) for S in self.g2_lens}

    def _load(self, key: tuple[int, int]) -> GraphSession:
        return load_graph(self.paths[key], self.builders[key])   # rebuilt if the cache lost it

    def _release(self, family: list, bi: int) -> None:
        """Drop a block's sessions on the loader thread. QNN's HTP library is not safe with a
        session destroyed while another is being created (it logs "Device not found in
        registry" to stdout, which is `hexa ask`'s answer stream), so creation and destruction
        both happen there, one after the other."""
        box = [family[bi]]
        family[bi] = None
        if box[0] is not None:
            self._pool.submit(box.clear)

    def _request(self, bi: int) -> None:
        if self.g2[bi] is None and self._loading[bi] is None:
            self._loading[bi] = self._pool.submit(self._load_g2, bi)

    def ensure_g2(self, bi: int) -> None:
        """Block ``bi`` is about to run a decoding graph: wait for (or do) its load, drop its G1."""
        if self.switch_after is None and self._device_pending:
            # the first decoding step after a prefill: the device waits here for its last G2 loads
            self.ledger.device_stall_ms += self._device_pending
            self._device_pending = 0.0
        if self.g2[bi] is not None:
            return
        self._request(bi)
        t0 = time.perf_counter()
        graphs = self._loading[bi].result()
        self._waited((time.perf_counter() - t0) * 1000)
        self._loading[bi] = None
        self.g2[bi] = graphs
        for S, g in graphs.items():
            self.load_ms[(bi, S)] = g.load_ms
        self._release(self.g1, bi)              # one family resident per block

    def begin_prefill(self, total_tokens: int) -> None:
        """Plan the switches of a prefill of ``total_tokens``; reload G1 where a block lacks it."""
        self._exposed_ms = 0.0
        self._device_pending = 0.0
        if not self.progressive:
            return
        for bi in range(self.n):
            if self.g1[bi] is None:             # the previous request left it on G2
                t0 = time.perf_counter()
                self.g1[bi] = self._pool.submit(self._load, (bi, self.g1_len)).result()
                self._waited((time.perf_counter() - t0) * 1000)
                if self.device is not None:     # a blocking load on the device too
                    self.ledger.device_stall_ms += self.device.cost(bi, self.g1_len).load_ms
                self._release(self.g2, bi)
        chunks = max(1, math.ceil(total_tokens / self.g1_len))
        costs = self._costs()
        self.switch_after, timeline = plan(chunks, costs, early=self.early)
        if self.device is not None:             # the costs were the device's: so is the timeline
            during, self._device_pending = _waits(chunks, costs, self.switch_after, timeline)
            self.ledger.device_stall_ms += during
        self.chunk = 0
        for bi, c in enumerate(self.switch_after):
            if c < 0:
                self._request(bi)

    def _costs(self) -> Costs:
        g2 = self.g2_lens[-1]
        if self.device is not None:             # the device's times, not this machine's
            cost = self.device.cost
            return Costs(load_ms=[sum(cost(bi, S).load_ms for S in self.g2_lens) for bi in range(self.n)],
                         g1_ms=[cost(bi, self.g1_len).compute_ms for bi in range(self.n)],
                         g2_ms=[cost(bi, g2).compute_ms * self.g1_len / g2 for bi in range(self.n)])
        load = [sum(self.load_ms.get((bi, S), 0.0) for S in self.g2_lens) for bi in range(self.n)]
        g1 = [self.run_ms.get((bi, self.g1_len), 0.0) for bi in range(self.n)]
        # a G1 chunk as G2 sub-chunks; unmeasured: assume each sub-chunk costs as much as a G1 pass
        g2_ms = [self.run_ms[(bi, g2)] * self.g1_len / g2 if (bi, g2) in self.run_ms
                 else g1[bi] * self.g1_len / g2 for bi in range(self.n)]
        return Costs(load_ms=load, g1_ms=g1, g2_ms=g2_ms)

    def uses_g1(self, bi: int) -> bool:
        """During prefill: does block ``bi`` still run the current chunk on G1?"""
        if not self.progressive or self.switch_after is None:
            return self.has_g1(bi)
        return self.has_g1(bi) and self.chunk <= self.switch_after[bi]

    def after_chunk_block(self, bi: int) -> None:
        """Block ``bi`` finished the current prefill chunk: request its G2 if the plan says so."""
        if self.switch_after is not None and self.chunk == self.switch_after[bi]:
            self._request(bi)
            # its last G1 chunk is done: free G1 now, not at the first decoding step, or the end
            # of prefill would hold both families of every block (measured: peak RSS above that
            # of keeping every graph loaded)
            self._release(self.g1, bi)

    def end_chunk(self) -> None:
        if self.switch_after is not None:
            self.chunk += 1

    def end_prefill(self) -> None:
        self.switch_after = None

    @property
    def status(self) -> SwitchStatus:
        """Blocks whose decoding graphs are loaded (or finished loading in the background)."""
        done = sum(1 for bi in range(self.n) if self.g2[bi] is not None
                   or (self._loading[bi] is not None and self._loading[bi].done()))
        return SwitchStatus(switched=done, total=self.n, exposed_ms=self._exposed_ms)

    def resident(self) -> list[str]:
        return ["G1" if self.g1[bi] is not None else "G2" if self.g2[bi] is not None else "-"
                for bi in range(self.n)]


def _waits(chunks: int, costs: Costs, switch_after: list[int], timeline: Timeline) -> tuple[float, float]:
    """The load waits of a planned prefill: (during it, after it until every G2 is in). The
    timeline's computes are left out: the ledger prices the graph runs actually made."""
    compute = sum((s + 1) * g1 + (chunks - 1 - s) * g2          # chunks 0..s on G1, the rest on G2
                  for s, g1, g2 in zip(switch_after, costs.g1_ms, costs.g2_ms))
    return max(0.0, timeline.prefill_ms - compute), timeline.stall_ms
