"""The ``qnn`` backend: the decoder run as static-shape graphs on the HTP, the KV cache owned here.

``QnnTransformer`` is the second runtime of ``backend.Backend`` (the first is
``CompactTransformer``). The layers are split into blocks; each block is compiled for a few
token lengths S (a long prefill graph G1, short decoding/verification graphs G2) at one static
context C. A call feeding n tokens runs the shortest graph with S >= n, padding the rest; a longer
feed (a prefill chunk) runs the longest graph on consecutive sub-chunks, which gives the same result
as one bigger graph. The embedding lookup, final norm and output projection run on the CPU model.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from bisect import bisect_left
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..errors import EngineError
from ..kv_cache import KVCache
from ..transformer import CompactTransformer
from .blocks import BlockGraphs, SwitchStatus
from .graphs import GRAPH_VERSION, MASKED, build_block, save_block
from .session import backend_version, provider_options

PREFILL_LENGTH = 64          # G1
DECODE_LENGTHS = (1, 8)      # G2 family: a plain step, and a verification of up to 7 draft tokens
BLOCK_LAYERS = 6


class QnnTransformer:
    """The qnn runtime (``backend.Backend``): static graphs, switched progressively during prefill."""

    def __init__(self, cpu: CompactTransformer, cache_dir: Path, model_name: str, context: int,
                 prefill_length: int = PREFILL_LENGTH, decode_lengths: tuple[int, ...] = DECODE_LENGTHS,
                 block_layers: int = BLOCK_LAYERS, progressive: bool | None = None,
                 progress: Callable[[str], None] | None = None):
        self.cpu = cpu
        self.config = c = cpu.config
        self.context = context
        self.lengths = tuple(sorted(set(decode_lengths) | {prefill_length}))
        self.decode_lengths = tuple(sorted(decode_lengths))
        self.prefill_length = prefill_length
        self.max_draft = self.decode_lengths[-1] - 1     # drafts + the pending token fill a G2 graph
        n = c.num_layers
        self.blocks = [(a, min(a + block_layers, n)) for a in range(0, n, block_layers)]
        self._group = c.num_heads // c.num_kv_heads
        self.lm_head = cpu.lm_head
        self.linear = cpu.linear
        self.kernel = (f"qnn htp ({backend_version()}, soc {provider_options()['soc_model']}), "
                       f"graphs S={'/'.join(map(str, self.lengths))} C={context}, "
                       f"{len(self.blocks)} blocks; cpu: {cpu.kernel}")
        if progressive is None:   # HEXA_QNN_SWITCH=0 keeps every graph loaded
            progressive = os.environ.get("HEXA_QNN_SWITCH", "1") != "0"
        self.progressive = progressive
        self.kernel += ", progressive graph switching" if progressive else ", all graphs loaded"
        self.kernel_build = cpu.kernel_build
        self.prefill_graph = f"qnn:S{prefill_length}xC{context}"
        key = hashlib.sha256("|".join([model_name, str(GRAPH_VERSION), backend_version(),
                                       *provider_options().values()]).encode()).hexdigest()[:12]
        self.folder = Path(cache_dir) / "qnn" / f"{model_name}-{key}"
        _prune_stale(self.folder)
        paths, builders = {}, {}
        for bi, (a, b) in enumerate(self.blocks):
            for S in self.lengths:
                paths[(bi, S)] = self.folder / f"block{a:02d}-{b:02d}_s{S}_c{context}.ctx.onnx"
                builders[(bi, S)] = (lambda p, a=a, b=b, S=S:
                                     save_block(build_block(cpu, a, b, S, context), p))
        self.graphs = BlockGraphs(paths, builders, len(self.blocks), prefill_length, self.decode_lengths,
                                  progressive, progress)
        self._in_prefill = False

    # ---- progressive graph switching, driven by the generation loop
    def begin_prefill(self, total_tokens: int) -> None:
        self.graphs.begin_prefill(total_tokens)
        self._in_prefill = True

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

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.cpu.logits(hidden)

    def graph_for(self, n: int) -> int:
        """The static length a feed of ``n`` tokens runs on (longer feeds run it repeatedly)."""
        i = bisect_left(self.lengths, n)
        return self.lengths[i] if i < len(self.lengths) else self.lengths[-1]

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, cache: KVCache,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """Same contract as ``CompactTransformer.forward``: new K/V pending at [length, length+n)."""
        n = tokens.shape[0]
        start = cache.length
        if start + n > cache.capacity:
            raise ValueError("KV cache is full")
        if mask is None:
            mask = torch.ones(n, start + n, dtype=torch.bool).tril(start)
        h = self.cpu.embed[tokens]
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
            h = torch.cat(out)
        else:
            inputs = _GraphInputs(self, positions, start, mask)
            for bi in range(len(self.blocks)):
                if n > G2 and self.graphs.has_g1(bi):
                    S = G1
                else:
                    self.graphs.ensure_g2(bi)
                    S = self.graph_for(min(n, G2))
                h = self._block(bi, S, h, cache, inputs)
        return self.cpu._rms(h, self.cpu.norm)

    def _block(self, bi: int, S: int, h: torch.Tensor, cache: KVCache, inputs: _GraphInputs) -> torch.Tensor:
        """Rows ``h`` through block ``bi`` on its S-token graph, S rows at a time; their K/V go to
        the cache slots ``inputs`` was made for."""
        a, b = self.blocks[bi]
        graph = self.graphs.session(bi, S)
        out = []
        for o, p, feed in inputs.pieces(S):
            # padding rows repeat the last token: all-zero rows would make RMSNorm divide by zero,
            # and NaN keys would poison real rows' attention even under the mask
            xs = np.empty((S, h.shape[1]), np.float32)
            xs[:p] = h[o:o + p].numpy()
            xs[p:] = xs[p - 1]
            feed["x"] = xs
            feed["past_k"] = cache.k[a:b].numpy()
            feed["past_v"] = cache.v[a:b].numpy()
            t0 = time.perf_counter()
            x_out, k_new, v_new = graph.run(feed)
            self.graphs.note_run(bi, S, (time.perf_counter() - t0) * 1000)
            at = inputs.at + o
            cache.k[a:b, :, at:at + p] = torch.from_numpy(k_new[:, :, :p])
            cache.v[a:b, :, at:at + p] = torch.from_numpy(v_new[:, :, :p])
            out.append(torch.from_numpy(x_out[:p].copy()))
        return torch.cat(out) if len(out) > 1 else out[0]


class _GraphInputs:
    """The position-dependent graph inputs (RoPE, mask) of one feed, split into pieces of S rows.

    They are the same for every block, so each S is built once per feed, not once per block."""

    def __init__(self, model: QnnTransformer, positions: torch.Tensor, at: int, mask: torch.Tensor):
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
        pos = torch.cat([positions, positions[-1:].expand(pad)]) if pad else positions
        add = np.full((S, C + S), MASKED, np.float32)
        add[:s, :at][mask[:, :at].numpy()] = 0.0
        add[:s, C:C + s][mask[:, at:at + s].numpy()] = 0.0
        add[np.arange(s, S), C + np.arange(s, S)] = 0.0      # padding rows see only themselves
        return {"cos": m.cpu.cos[pos].numpy(), "sin": m.cpu.sin[pos].numpy(),
                "mask": np.tile(add, (m._group, 1))}


def _prune_stale(folder: Path) -> None:
    """Graphs of an older hexa (or other provider settings) for this model: ~0.5 GB each set."""
    for other in folder.parent.glob(folder.name.rsplit("-", 1)[0] + "-*"):
        if other != folder and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)
