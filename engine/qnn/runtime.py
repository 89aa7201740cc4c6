"""The ``qnn`` backend: the decoder run as static-shape graphs on the HTP, the KV cache owned here.

``QnnTransformer`` stands in for ``CompactTransformer`` in the generation loop (same ``forward`` /
``logits`` / ``new_cache`` contract). The layers are split into blocks; each block is compiled for a
few token lengths S (a long prefill graph G1, short decoding/verification graphs G2) at one static
context C. A call feeding n tokens runs the shortest graph with S >= n, padding the rest; a longer
feed (a prefill chunk) runs the longest graph on consecutive sub-chunks, which gives the same result
as one bigger graph. The embedding lookup, final norm and output projection run on the CPU model.
"""
from __future__ import annotations

import hashlib
from bisect import bisect_left
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..errors import EngineError
from ..kv_cache import KVCache
from ..transformer import CompactTransformer
from .graphs import GRAPH_VERSION, MASKED, build_block, save_block
from .session import backend_version, load_graph, provider_options

PREFILL_LENGTH = 64          # G1
DECODE_LENGTHS = (1, 8)      # G2 family: a plain step, and a verification of up to 7 draft tokens
BLOCK_LAYERS = 6


class QnnTransformer:
    def __init__(self, cpu: CompactTransformer, cache_dir: Path, model_name: str, context: int,
                 prefill_length: int = PREFILL_LENGTH, decode_lengths: tuple[int, ...] = DECODE_LENGTHS,
                 block_layers: int = BLOCK_LAYERS, progress: Callable[[str], None] | None = None):
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
        self.prefill_graph = f"qnn:S{prefill_length}xC{context}"
        key = hashlib.sha256("|".join([model_name, str(GRAPH_VERSION), backend_version(),
                                       *provider_options().values()]).encode()).hexdigest()[:12]
        self.folder = Path(cache_dir) / "qnn" / f"{model_name}-{key}"
        self.graphs = {}
        self.load_ms = 0.0
        total = len(self.blocks) * len(self.lengths)
        for S in self.lengths:
            for bi, (a, b) in enumerate(self.blocks):
                path = self.folder / f"block{a:02d}-{b:02d}_s{S}_c{context}.ctx.onnx"
                if progress and not path.is_file():
                    progress(f"compiling QNN graph {len(self.graphs) + 1}/{total} (layers {a}-{b - 1}, S={S})")
                g = load_graph(path, lambda p, a=a, b=b, S=S: save_block(build_block(cpu, a, b, S, context), p))
                self.graphs[(bi, S)] = g
                self.load_ms += g.load_ms

    # ---- the CompactTransformer contract used by generation and profiling
    def new_cache(self, capacity: int) -> KVCache:
        if capacity > self.context:
            raise EngineError(f"request needs {capacity} KV slots but the QNN graphs were built for a "
                              f"context of {self.context} (use --context)")
        c = self.config
        return KVCache(c.num_layers, c.num_kv_heads, c.head_dim, self.context)

    def parameter_bytes(self) -> int:
        return self.cpu.parameter_bytes()

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
        x = self.cpu.embed[tokens]
        out = []
        S = self.graph_for(n)
        for o in range(0, n, S):
            s = min(S, n - o)
            out.append(self._run(x[o:o + s], positions[o:o + s], cache, start + o,
                                 mask[o:o + s, :start + o + s], self.graph_for(s)))
        return self.cpu._rms(torch.cat(out), self.cpu.norm)

    def _run(self, x: torch.Tensor, positions: torch.Tensor, cache: KVCache, at: int,
             mask: torch.Tensor, S: int) -> torch.Tensor:
        """Feed s <= S tokens whose K/V go to slots [at, at+s); ``mask`` is bool [s, at+s]."""
        s, C, D = x.shape[0], self.context, self.config.head_dim
        pad = S - s
        # padding rows repeat the last token: all-zero rows would make RMSNorm divide by zero, and
        # NaN keys would poison real rows' attention even under the mask
        xs = np.empty((S, x.shape[1]), np.float32)
        xs[:s] = x.numpy()
        xs[s:] = xs[s - 1]
        pos = torch.cat([positions, positions[-1:].expand(pad)]) if pad else positions
        add = np.full((S, C + S), MASKED, np.float32)
        add[:s, :at][mask[:, :at].numpy()] = 0.0
        add[:s, C:C + s][mask[:, at:at + s].numpy()] = 0.0
        add[np.arange(s, S), C + np.arange(s, S)] = 0.0      # padding rows see only themselves
        feed = {"cos": self.cpu.cos[pos].numpy(), "sin": self.cpu.sin[pos].numpy(),
                "mask": np.repeat(add[None], self._group, 0).reshape(self._group * S, C + S)}
        h = xs
        for bi, (a, b) in enumerate(self.blocks):
            feed["x"] = h
            feed["past_k"] = cache.k[a:b].numpy()
            feed["past_v"] = cache.v[a:b].numpy()
            h, k_new, v_new = self.graphs[(bi, S)].run(feed)
            cache.k[a:b, :, at:at + s] = torch.from_numpy(k_new[:, :, :s])
            cache.v[a:b, :, at:at + s] = torch.from_numpy(v_new[:, :, :s])
        return torch.from_numpy(h[:s].copy())
