"""The ``qnn`` backend: the decoder run as static-shape graphs on the HTP, the KV cache owned here.

``QnnTransformer`` is the second runtime of ``backend.Backend`` (the first is
``CompactTransformer``). The layers are split into blocks; each block is compiled for a few
token lengths S (a long prefill graph G1, short decoding/verification graphs G2) at one static
context C. A call feeding n tokens runs the shortest graph with S >= n, padding the rest; a longer
feed (a prefill chunk) runs the longest graph on consecutive sub-chunks, which gives the same result
as one bigger graph. The embedding lookup, final norm and output projection run on the CPU model.

On a Snapdragon each block's graphs are one weight-shared context binary, all kept loaded (one
copy of the weights per block); on the x86-64 emulator they are separate binaries, switched
progressively (shared.py). ``write_shared_binaries`` builds a device's shared binaries anywhere.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from bisect import bisect_left
from pathlib import Path
from typing import Callable

import numpy as np

from ...errors import EngineError
from ..kv_cache import KVCache
from ..reference import rmsnorm
from ..transformer import CompactTransformer
from .blocks import BlockGraphs, SwitchStatus
from .cost_profile import DeviceCostProfile, load as load_cost_profile
from .graphs import GRAPH_VERSION, MASKED, build_block, save_block
from .session import GraphSource, backend_version, compile_shared, provider_options
from .shared import Layout, choose_layout, export_layout

PREFILL_LENGTH = 64          # G1
DECODE_LENGTHS = (1, 8)      # G2 family: a plain step, and a verification of up to 7 draft tokens
BLOCK_LAYERS = 6


class QnnTransformer:
    """The qnn runtime (``backend.Backend``): static graphs, switched progressively during prefill."""

    def __init__(self, cpu: CompactTransformer, cache_dir: Path, model_name: str, context: int,
                 prefill_length: int = PREFILL_LENGTH, decode_lengths: tuple[int, ...] = DECODE_LENGTHS,
                 block_layers: int = BLOCK_LAYERS, progressive: bool | None = None,
                 progress: Callable[[str], None] | None = None, soc: str | None = None,
                 cost_profile: str | None = None, shared: bool | None = None, early_switch: bool = False):
        self.cpu = cpu
        self.soc = soc                      # the Snapdragon the graphs are built for (None: the default)
        self.cost_profile_spec = cost_profile
        self.config = c = cpu.config
        self.context = context
        self.lengths = tuple(sorted(set(decode_lengths) | {prefill_length}))
        self.decode_lengths = tuple(sorted(decode_lengths))
        self.prefill_length = prefill_length
        self.max_draft = self.decode_lengths[-1] - 1     # drafts + the pending token fill a G2 graph
        n = c.num_layers
        self.blocks = [(a, min(a + block_layers, n)) for a in range(0, n, block_layers)]
        # the device's times replace the emulator's in planning; checked before any graph is built
        self.cost_profile: DeviceCostProfile | None = None
        if cost_profile:
            self.cost_profile = load_cost_profile(cost_profile, cache_dir, model_name)
            self.cost_profile.check_fits(model_name, GRAPH_VERSION, context, self.blocks, self.lengths)
        self._group = c.num_heads // c.num_kv_heads
        self.lm_head = cpu.lm_head
        self.linear = cpu.linear
        self.head_logits = cpu.head_logits   # calibration's ranking runs on the CPU
        self.softmax_topk = cpu.softmax_topk
        self.layout = layout = choose_layout(soc, shared=shared)   # raises on a bad --soc, before any graph work
        if layout.note and progress:
            progress(layout.note)
        self.kernel = (f"qnn htp ({backend_version()}, soc {layout.soc.id} {layout.soc.chip}, "
                       f"{layout.word} context binaries), graphs S={'/'.join(map(str, self.lengths))} "
                       f"C={context}, {len(self.blocks)} blocks; cpu: {cpu.kernel}")
        if progressive is None:   # the qnn.switch option: False keeps every graph loaded, True switches
            # a block's shared binary holds one weight copy for all its graphs: nothing to save by
            # switching, and reloading one graph would load the whole binary again
            progressive = not layout.shared
        self.progressive = progressive
        self.kernel += ", progressive graph switching" if progressive else ", all graphs loaded"
        self.kernel_build = cpu.kernel_build
        self.prefill_graph = f"qnn:S{prefill_length}xC{context}"
        self.folder = graph_folder(cache_dir, model_name, layout)
        _prune_stale(self.folder, model_name)
        paths, builders, bins = _graph_sources(cpu, self.folder, self.blocks, self.lengths, context, layout)
        if layout.shared:   # a block's graphs are compiled together, before any is loaded
            _build_shared(paths, builders, bins, self.lengths, layout, progress)
        self.graphs = BlockGraphs(paths, builders, len(self.blocks), prefill_length, self.decode_lengths,
                                  progressive, progress, cost_profile=self.cost_profile, early=early_switch)
        self._in_prefill = False

    # ---- progressive graph switching, driven by the generation loop
    def begin_prefill(self, total_tokens: int) -> None:
        self.graphs.begin_prefill(total_tokens)
        self._in_prefill = True

    def answer_rows(self) -> None:
        """Nothing to switch: the HTP graphs have no prompt-only arithmetic to leave."""

    def end_prefill(self) -> None:
        self.graphs.end_prefill()
        self._in_prefill = False

    @property
    def switch_status(self) -> SwitchStatus:
        return self.graphs.status

    # ---- the rest of the Backend contract
    def new_cache(self, capacity: int) -> KVCache:
        if capacity > self.context:
            raise EngineError(f"request needs {capacity} KV slots but the QNN graphs were built for a "
                              f"context of {self.context} (use --context)")
        c = self.config
        return KVCache(c.num_layers, c.num_kv_heads, c.head_dim, self.context)

    def logits(self, hidden: np.ndarray) -> np.ndarray:
        return self.cpu.logits(hidden)

    def graph_for(self, n: int) -> int:
        """The static length a feed of ``n`` tokens runs on (longer feeds run it repeatedly)."""
        i = bisect_left(self.lengths, n)
        return self.lengths[i] if i < len(self.lengths) else self.lengths[-1]

    def forward(self, tokens: np.ndarray, positions: np.ndarray, cache: KVCache,
                mask: np.ndarray | None = None) -> np.ndarray:
        """Same contract as ``CompactTransformer.forward``: new K/V pending at [length, length+n)."""
        tokens, positions = np.asarray(tokens, dtype=np.int64), np.asarray(positions, dtype=np.int64)
        n = tokens.shape[0]
        start = cache.length
        if start + n > cache.capacity:
            raise ValueError("KV cache is full")
        if mask is None:
            mask = np.tri(n, start + n, start, dtype=bool)
        h = np.asarray(self.cpu.embed[tokens], dtype=np.float32)
        G1, G2 = self.prefill_length, self.decode_lengths[-1]
        if self._in_prefill:
            # chunk-major, as the switching plan counts: each G1-sized chunk through every block
            out = []
            for o in range(0, n, G1):
                s = min(G1, n - o)
                inputs = _GraphInputs(self, positions[o:o + s], start + o, mask[o:o + s, :start + o + s])
                hs = h[o:o + s]
                for bi in range(len(self.blocks)):
                    if self.graphs.uses_g1(bi):
                        S = G1
                    else:
                        self.graphs.ensure_g2(bi)
                        S = G2
                    hs = self._block(bi, S, hs, cache, inputs)
                    self.graphs.after_chunk_block(bi)
                self.graphs.end_chunk()
                out.append(hs)
            h = np.concatenate(out)
        else:
            inputs = _GraphInputs(self, positions, start, mask)
            for bi in range(len(self.blocks)):
                if n > G2 and self.graphs.has_g1(bi):
                    S = G1
                else:
                    self.graphs.ensure_g2(bi)
                    S = self.graph_for(min(n, G2))
                h = self._block(bi, S, h, cache, inputs)
        return rmsnorm(h, self.cpu.norm, self.config.rms_eps)

    def _block(self, bi: int, S: int, h: np.ndarray, cache: KVCache, inputs: _GraphInputs) -> np.ndarray:
        """Rows ``h`` through block ``bi`` on its S-token graph, S rows at a time; their K/V go to
        the cache slots ``inputs`` was made for."""
        a, b = self.blocks[bi]
        graph = self.graphs.session(bi, S)
        out = []
        for o, p, feed in inputs.pieces(S):
            # padding rows repeat the last token: all-zero rows would make RMSNorm divide by zero,
            # and NaN keys would poison real rows' attention even under the mask
            xs = np.empty((S, h.shape[1]), np.float32)
            xs[:p] = h[o:o + p]
            xs[p:] = xs[p - 1]
            feed["x"] = xs
            feed["past_k"] = cache.k[a:b]
            feed["past_v"] = cache.v[a:b]
            t0 = time.perf_counter()
            x_out, k_new, v_new = graph.run(feed)
            self.graphs.note_run(bi, S, (time.perf_counter() - t0) * 1000)
            at = inputs.at + o
            cache.k[a:b, :, at:at + p] = k_new[:, :, :p]
            cache.v[a:b, :, at:at + p] = v_new[:, :, :p]
            out.append(x_out[:p].copy())
        return np.concatenate(out) if len(out) > 1 else out[0]


class _GraphInputs:
    """The position-dependent graph inputs (RoPE, mask) of one feed, split into pieces of S rows.

    They are the same for every block, so each S is built once per feed, not once per block."""

    def __init__(self, model: QnnTransformer, positions: np.ndarray, at: int, mask: np.ndarray):
        self.model, self.positions, self.at, self.mask = model, positions, at, mask
        self._by_length: dict[int, list[tuple[int, int, dict]]] = {}

    def pieces(self, S: int) -> list[tuple[int, int, dict]]:
        """(row offset, rows, inputs) per run; ``mask`` rows are bool over slots [0, at + rows)."""
        if S not in self._by_length:
            n = self.positions.shape[0]
            self._by_length[S] = [(o, min(S, n - o), self._inputs(o, min(S, n - o), S)) for o in range(0, n, S)]
        return self._by_length[S]

    def _inputs(self, o: int, s: int, S: int) -> dict:
        m, C, at = self.model, self.model.context, self.at + o
        mask = self.mask[o:o + s, :at + s]
        positions = self.positions[o:o + s]
        pad = S - s
        pos = np.concatenate([positions, np.repeat(positions[-1:], pad)]) if pad else positions
        add = np.full((S, C + S), MASKED, np.float32)
        add[:s, :at][mask[:, :at]] = 0.0
        add[:s, C:C + s][mask[:, at:at + s]] = 0.0
        add[np.arange(s, S), C + np.arange(s, S)] = 0.0      # padding rows see only themselves
        if int(pos.max()) >= m.cpu._rope_rows:   # the tables grow on demand (transformer._grow_rope)
            m.cpu._grow_rope(int(pos.max()) + 1)
        return {"cos": np.asarray(m.cpu.cos[pos], np.float32), "sin": np.asarray(m.cpu.sin[pos], np.float32),
                "mask": np.tile(add, (m._group, 1))}


def graph_folder(cache_dir: Path, model_name: str, layout: Layout) -> Path:
    """Where a model's compiled graphs for one SoC and layout live: the name says both (a device's
    export sits beside the emulator's graphs), the hash what else makes binaries differ (the same
    hash as before SoCs were named, so those graphs are adopted, not compiled again)."""
    key = hashlib.sha256("|".join([model_name, str(GRAPH_VERSION), backend_version(),
                                   *provider_options(layout.soc).values()]).encode()).hexdigest()[:12]
    return Path(cache_dir) / "qnn" / f"{model_name}-{layout.soc.chip.lower()}-{layout.word}-{key}"


def _graph_sources(cpu: CompactTransformer, folder: Path, blocks: list[tuple[int, int]],
                   lengths: tuple[int, ...], context: int, layout: Layout):
    """Per (block, S): its EP context file and ``GraphSource``; per block (shared layout): its .bin."""
    paths, sources, bins = {}, {}, {}
    for bi, (a, b) in enumerate(blocks):
        writers = {S: (lambda p, a=a, b=b, S=S: save_block(build_block(cpu, a, b, S, context), p))
                   for S in lengths}
        for S in lengths:
            paths[(bi, S)] = folder / f"block{a:02d}-{b:02d}_s{S}_c{context}.ctx.onnx"
        rebuild = None
        if layout.shared:
            bins[bi] = folder / f"block{a:02d}-{b:02d}_c{context}.bin"
            graphs = [(paths[(bi, S)], writers[S]) for S in lengths]
            rebuild = (lambda graphs=graphs, out=bins[bi]: compile_shared(graphs, out, layout.soc))
        for S in lengths:
            sources[(bi, S)] = GraphSource(writers[S], layout.soc, rebuild)
    return paths, sources, bins


def _build_shared(paths, sources, bins, lengths, layout: Layout, progress) -> list[Path]:
    """Compile each block whose shared binary or one of its graphs' context files is missing."""
    for bi, out in bins.items():
        if out.is_file() and all(paths[(bi, S)].is_file() for S in lengths):
            continue
        if progress:
            progress(f"compiling block {bi + 1}/{len(bins)} for {layout.soc.chip}: graphs "
                     f"S={'/'.join(map(str, lengths))} into one weight-shared binary")
        sources[(bi, lengths[0])].rebuild_block()
    return list(bins.values())


def write_shared_binaries(cpu: CompactTransformer, cache_dir: Path, model_name: str, context: int, soc: str,
                          prefill_length: int = PREFILL_LENGTH, decode_lengths: tuple[int, ...] = DECODE_LENGTHS,
                          block_layers: int = BLOCK_LAYERS,
                          progress: Callable[[str], None] | None = None) -> list[Path]:
    """The weight-shared context binaries the qnn backend on Snapdragon ``soc`` loads, built on
    any machine (the emulator cannot load them): one .bin per block, in the cache folder that
    backend uses for ``model_name`` and ``context`` (copy that folder into the device's cache).
    Blocks already built are kept. Returns the .bin paths, block by block."""
    layout = export_layout(soc)
    lengths = tuple(sorted(set(decode_lengths) | {prefill_length}))
    n = cpu.config.num_layers
    blocks = [(a, min(a + block_layers, n)) for a in range(0, n, block_layers)]
    folder = graph_folder(cache_dir, model_name, layout)
    _prune_stale(folder, model_name)
    paths, sources, bins = _graph_sources(cpu, folder, blocks, lengths, context, layout)
    return _build_shared(paths, sources, bins, lengths, layout, progress)


def _prune_stale(folder: Path, model_name: str) -> None:
    """Graphs of an older hexa (or other provider settings) for this model, SoC and layout:
    ~0.5 GB each set. A folder named before SoCs were (``<model>-<hash>``, separate binaries) is
    taken over when its hash is this folder's (the same graphs), else removed."""
    if not folder.parent.is_dir():
        return
    head, key = folder.name.rsplit("-", 1)
    unnamed = folder.parent / f"{model_name}-{key}"
    if head.endswith("-separate") and unnamed.is_dir() and not folder.exists():
        try:
            os.replace(unnamed, folder)
        except OSError:        # another hexa got there first
            pass
    unnamed_pattern = re.compile(re.escape(model_name) + r"-[0-9a-f]{12}")
    for other in folder.parent.iterdir():
        if other == folder or not other.is_dir():
            continue
        older = other.name.startswith(head + "-") and re.fullmatch(r"[0-9a-f]{12}", other.name[len(head) + 1:])
        if older or unnamed_pattern.fullmatch(other.name):
            shutil.rmtree(other, ignore_errors=True)
