"""The engine's own decoder forward for llama and qwen2 (one small module, in the spirit of gpt-fast).

Differences from transformers that matter to hexa: the KV cache is the engine's (``KVCache``),
positions are explicit (a draft tree puts siblings at the same depth), the attention mask over
cache + new tokens is arbitrary (tree masks), and q/k/v and gate/up projections are fused so a
step costs fewer kernel launches.

The forward pass exists in four forms; each is kept for a job no other does:
- the fused C pass (``kernels/forward.c`` through ``kernels/fused.py``): every pass of up to
  ``HEXA_FORWARD_ROWS`` tokens (each step and each draft tree) as one native call. It is the
  speed: the one-call pass is what puts hexa ahead of llama.cpp on the embedded model.
- the native layers (``_native_layers``): the same kernels called layer by layer, for passes
  longer than the fused pass takes (prefill chunks). Rows never interact in either, so tree rows
  equal plain steps bit for bit.
- the reference layers (``_reference_layers``, numpy in fp32, ``reference.py``): a model loaded
  without the native kernel (no C compiler, or ``linear = "numpy"``), and the plain reference the
  native arithmetic is checked against (tests/engine/test_foundation_model.py against transformers).
  No torch anywhere on the run path: its import alone held ~226 MB resident.
- the ONNX graphs (``qnn/graphs.py``): the static-shape blocks the Hexagon NPU runs; QNN takes
  nothing else. They are built from this module's weights and checked against it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from . import reference as ref
from .arithmetic import DECODE_CHOICES, LINEAR_CHOICES, library_linear  # noqa: F401
from ..errors import EngineError
from ..options import kv_f16
from .kv_cache import KVCache
from ..model.config import ModelConfig


MAX_TREE = 32         # draft tokens per verification on this dynamic-shape backend


class Layer:
    __slots__ = ("ln_in", "wqkv", "bqkv", "wo", "ln_post", "wgu", "wdown", "q_norm", "k_norm", "post_attn",
                 "post_ffn")

    def __init__(self, **w):
        for k in self.__slots__:
            setattr(self, k, w.get(k))



def _keep_packed(model: "CompactTransformer", folder: Path, build: str) -> None:
    """Write a just-packed model's packed file, then give packing's freed heap back to the system
    (Gemma-3-1B's first start kept 113 MB of it resident for the session: 1.04 GB, later 0.92)."""
    from ..heap import release_freed
    from ..model import packed_weights
    try:
        packed_weights.save(model, folder, build)
    except OSError:
        pass   # a read-only cache: the next start packs again
    release_freed()

class CompactTransformer:
    """The CPU runtime (``backend.Backend``): dynamic shapes, no graphs to switch."""
    max_draft = MAX_TREE
    prefill_graph = "torch:dynamic"
    decode_lengths: tuple[int, ...] = ()
    switch_status = None

    def __init__(self, config: ModelConfig, weights: dict[str, np.ndarray], linear: str = "native",
                 decode: str = "int8"):
        p = "model."
        embed = weights[p + "embed_tokens.weight"]
        layers = []
        for i in range(config.num_layers):
            q = f"{p}layers.{i}."
            a = q + "self_attn."
            bias = None
            if config.attention_bias:
                bias = np.concatenate([weights[a + n + "_proj.bias"] for n in "qkv"])
            layers.append(Layer(
                ln_in=weights[q + "input_layernorm.weight"],
                wqkv=np.concatenate([weights[a + n + "_proj.weight"] for n in "qkv"]),
                bqkv=bias,
                wo=weights[a + "o_proj.weight"],
                ln_post=weights[q + "post_attention_layernorm.weight"],
                wgu=np.concatenate([weights[q + "mlp.gate_proj.weight"], weights[q + "mlp.up_proj.weight"]]),
                wdown=weights[q + "mlp.down_proj.weight"],
            ))
        self._setup(config, embed, embed if config.tie_embeddings else weights["lm_head.weight"],
                    weights[p + "norm.weight"], layers, linear, decode)

    @classmethod
    def from_packed(cls, config: ModelConfig, state: dict, kernel, name: str,
                    linear: str = "native", decode: str = "int8") -> "CompactTransformer":
        """The model from ``packed_weights.load``'s state: the kernel's packed weights as saved,
        no fp32 copy ever read."""
        from .kernels import PackedWeight

        def weight(entry: dict) -> PackedWeight:
            quant = (entry["codes"], entry["bits"]) if entry["bits"] else None
            return PackedWeight(entry.get("data"), tuple(entry["shape"]), quant, kernel)

        layers = [Layer(ln_in=L["ln_in"], bqkv=L["bqkv"], ln_post=L["ln_post"],
                        **{n: L.get(n) for n in ("q_norm", "k_norm", "post_attn", "post_ffn")},
                        **{slot: weight(L[slot]) for slot in ("wqkv", "wo", "wgu", "wdown")})
                  for L in state["layers"]]
        head = weight(state["lm_head"])
        embed = state["embed"]
        if isinstance(embed, dict):   # an untied embedding kept as codes (a GGUF's own)
            embed = weight(embed)
        model = cls.__new__(cls)
        model._setup(config, head if state["tied"] else embed, head, state["norm"], layers, linear, decode)
        model._use_packed(kernel, name)
        return model

    def _setup(self, config: ModelConfig, embed, lm_head, norm: np.ndarray, layers: list[Layer],
               linear: str, decode: str = "int8") -> None:
        self.config = c = config
        self.embed, self.lm_head, self.norm, self.layers = embed, lm_head, norm, layers
        self._inv = {"global": c.inv_freq(), "local": c.inv_freq(c.rope_local_base) if c.local_layers else None}
        self._rope_rows = 0
        self._grow_rope(min(c.max_positions, 4096))   # grown on demand: Gemma's 32k x 256 tables were 134 MB
        self._q = c.num_heads * c.head_dim
        self._kv = c.num_kv_heads * c.head_dim
        self._group = c.num_heads // c.num_kv_heads
        self.linear, self._library = library_linear()
        self.native = None       # the native kernel, when it runs whole layers (64-dim heads)
        self._packer = None      # the native kernel, whenever it computes the products
        self._ranked: dict[int, object] = {}   # head_logits' rows (views of lm_head), by count
        self.softmax_topk = None   # the native kernel's, once packed
        self.fused = None        # its one-call forward pass for steps and trees (FusedForward)
        # fp32 arithmetic for every pass, else every pass on codes takes integer dot products
        # (steps, trees; prompt rows too, but on AMX tiles in bf16 and on the 512-bit tiles a
        # K-quant's with a scale per 256 inputs: begin_prefill); either way each
        # row is computed alone, so a prompt's KV never depends on how it was chunked or reused
        if decode not in DECODE_CHOICES:
            raise EngineError(f"decode {decode!r} is not one of {', '.join(DECODE_CHOICES)}")
        self.exact = decode == "exact"
        self.prompt_bf16 = False  # engine option prompt: prompt rows' own arithmetic (begin_prefill)
        self._prompt = False      # between begin_prefill and end_prefill, with prompt_bf16
        self.kv = "auto"         # the KV cache's values (use_kv, kv_dtype)
        self.kernel = self._library
        self.kernel_build = ""   # the native kernel's source digest, if in use

    def use_native_kernel(self, kernel, name: str) -> None:
        """Pack every projection (and the output head, which may be the tied embedding) for the
        native kernel and route all products through it, prefill chunks included (it beats the
        library kernels for 1-256 rows). The packed copies replace the originals: weights that
        are exactly Q4_1/Q8_0 keep only their codes, and ``embed[ids]`` still reads rows."""
        for L in self.layers:
            for slot in ("wqkv", "wo", "wgu", "wdown"):
                setattr(L, slot, kernel.pack(getattr(L, slot)))   # the fp32 original is freed here
        tied = self.lm_head is self.embed
        self.lm_head = kernel.pack(self.lm_head)
        if tied:
            self.embed = self.lm_head
        self._use_packed(kernel, name)

    def _use_packed(self, kernel, name: str) -> None:
        """Route every product through the native kernel (weights already packed) and, for
        64-dim heads, run steps and trees as one native call (``kernels/fused.py``)."""
        from .kernels import HEAD_DIMS, PackedWeight
        from .kernels.fused import FusedForward

        library = self.linear
        self._packer = kernel
        self.softmax_topk = kernel.softmax_topk

        def linear(x: np.ndarray, w, b: np.ndarray | None = None) -> np.ndarray:
            # a raw tensor is a calibration head subset, gathered per request
            return kernel.linear(x, w, b) if isinstance(w, PackedWeight) else library(x, w, b)
        self.linear = linear
        c = self.config
        if c.head_dim not in HEAD_DIMS and (c.model_type in ("qwen3", "gemma3") or c.local_layers):
            raise EngineError(f"{c.name or c.model_type}: heads of {c.head_dim} dims; the native pass a "
                              f"{c.model_type} model needs takes {', '.join(map(str, HEAD_DIMS))}")
        if self.config.head_dim in HEAD_DIMS:
            self.native = kernel
            for L in self.layers:   # the fused pass reads these through raw pointers
                for n in ("ln_in", "ln_post", "bqkv", "q_norm", "k_norm", "post_attn", "post_ffn"):
                    v = getattr(L, n)
                    setattr(L, n, np.ascontiguousarray(v, dtype=np.float32) if v is not None else None)
            self.norm = np.ascontiguousarray(self.norm, dtype=np.float32)
            self.fused = FusedForward(kernel, self.config, self.layers, self.norm)
        self.kernel = f"{name} packed + {self._library}"
        self.kernel_build = kernel.build

    def _grow_rope(self, rows: int) -> None:
        """cos/sin tables (and the local layers' own) for positions [0, rows)."""
        def table(inv):
            freqs = np.outer(np.arange(rows, dtype=np.float32), inv)
            emb = np.concatenate([freqs, freqs], axis=-1)
            return np.cos(emb), np.sin(emb)
        self.cos, self.sin = table(self._inv["global"])
        self.cos_local = self.sin_local = None
        if self._inv["local"] is not None:   # gemma3's sliding-window layers rotate with their own base
            self.cos_local, self.sin_local = table(self._inv["local"])
        self._rope_rows = rows

    @classmethod
    def load_gguf(cls, folder: Path, gguf: Path, kernel, linear: str = "native",
                  decode: str = "int8", fits: Callable[[ModelConfig, int, dict[str, int]], None] | None = None
                  ) -> "CompactTransformer":
        """A GGUF model as its own codes (``gguf_model.py``): packed from the file's blocks on the
        first start, from the packed file beside ``folder``'s config afterwards. ``fits(config,
        weight bytes, fp32 bytes by type)`` is asked before either (``footprint.check_fits``: it raises
        when they cannot fit in memory)."""
        from ..model import footprint, gguf_model, gguf_tensors, packed_weights

        config = ModelConfig.from_dict(json.loads((folder / "config.json").read_text()))
        key = gguf_model.packed_key(kernel.build)
        packed = packed_weights.path_for(folder, key)
        if fits is not None and packed.exists():   # the packed file holds what the weights will
            fits(config, packed.stat().st_size, {})
        state = packed_weights.load(folder, key)
        fresh = state is None
        if fresh:
            r = gguf_tensors.TensorFile(gguf)
            if fits is not None:
                fits(config, *footprint.packed_bytes(r))
            state = gguf_model.packed_state(r, config, kernel)
        model = cls.from_packed(config, state, kernel, kernel.isa, linear, decode)
        if fresh:
            _keep_packed(model, folder, key)
        return model

    @classmethod
    def load(cls, folder: Path, linear: str = "native", kernel=None, decode: str = "int8") -> "CompactTransformer":
        """The model in the cache ``folder``; with a native ``kernel``, packed for it — read from
        the packed file an earlier start wrote (``packed_weights``) when there is one, else packed
        from the fp32 weights and that file written."""
        from safetensors.numpy import load_file

        from ..model import packed_weights

        config = ModelConfig.from_dict(json.loads((folder / "config.json").read_text()))
        if kernel is not None:
            state = packed_weights.load(folder, kernel.build)
            if state is not None:
                return cls.from_packed(config, state, kernel, kernel.isa, linear, decode)
        model = cls(config, load_file(str(folder / "model.safetensors")), linear, decode)
        if kernel is not None:
            model.use_native_kernel(kernel, kernel.isa)
            _keep_packed(model, folder, kernel.build)
        return model

    def new_cache(self, capacity: int) -> KVCache:
        c = self.config
        if capacity > self._rope_rows:
            self._grow_rope(max(capacity, min(2 * self._rope_rows, c.max_positions)))
        return KVCache(c.num_layers, c.num_kv_heads, c.head_dim, capacity, self.kv_dtype)

    def use_kv(self, kv: str) -> None:
        """The KV cache's values in caches made from now on: "f16", "f32", or "auto"."""
        self.kv = kv

    @property
    def kv_dtype(self) -> type:
        """fp16 if asked, or for "auto" where the native kernels run the layers in int8
        arithmetic: a step's attention reads half the bytes, 46 KB a token of context for SmolLM2
        instead of 92 ("exact" keeps the fp32 arithmetic's reference values). Any pass reads back
        exactly what any pass wrote (one rounding, to nearest even, when it is written), so trees
        still equal plain steps and warm runs cold ones."""
        return np.float16 if kv_f16(self.kv, self.native is not None, self.exact) else np.float32

    def begin_prefill(self, total_tokens: int) -> None:
        """Passes until ``end_prefill`` are prompt rows. With ``prompt_bf16`` (the engine option
        prompt) the native kernels take them in bf16 on AMX tiles (``hexa_linear_prefill``;
        1.5-2.5x the int8 tiles a weight at 256 rows), a K-quant's with one scale per 256 inputs
        on the 512-bit tiles (AMD Zen 4 and 5: no product d * dx a block), elsewhere in
        decoding's arithmetic. No draft is verified against a prompt row and every method
        prefills alike, so the tokens stay identical across methods; but a prompt's KV is then
        not the steps' (why it is opt-in: an answer migrated to a hexa server, as token ids, may
        go on differently there)."""
        self._prompt = self.prompt_bf16

    def answer_rows(self) -> None:
        self._prompt = False

    def end_prefill(self) -> None:
        self._prompt = False

    def weight_bytes(self) -> int:
        """Bytes of every weight as held (codes, fp32 panels or plain tensors; a tied head once)."""
        held = [self.norm, self.embed] + ([] if self.lm_head is self.embed else [self.lm_head])
        held += [getattr(L, slot) for L in self.layers for slot in Layer.__slots__]
        return sum(t.nbytes for t in held if t is not None)

    @property
    def decode_arithmetic(self) -> str:
        """What every pass computes with, for the status lines: "int8" or "exact"."""
        return "int8" if self.native is not None and not self.exact else "exact"

    def forward(self, tokens: np.ndarray, positions: np.ndarray, cache: KVCache,
                mask: np.ndarray | None = None) -> np.ndarray:
        """Run ``tokens`` (1-D) at ``positions``; return final hidden states [S, hidden].

        New K/V go to cache slots [length, length+S) (pending until ``cache.commit``). ``mask`` is a
        bool [S, length+S] (True = may attend); None means causal over cache + new tokens.
        """
        c = self.config
        tokens, positions = np.asarray(tokens, dtype=np.int64), np.asarray(positions, dtype=np.int64)
        S = tokens.shape[0]
        start, end = cache.length, cache.length + S
        if end > cache.capacity:
            raise ValueError("KV cache is full")
        if mask is None and S > 1:
            mask = np.tri(S, end, start, dtype=bool)
        if mask is not None:
            # one additive float mask per pass (not a bool mask converted in every layer), rows
            # repeated for the query group folded into the sequence axis
            if mask.dtype == np.bool_:
                mask = np.where(mask, np.float32(0), np.float32(-np.inf))
            if self._group > 1:
                mask = np.tile(mask, (self._group, 1))
            mask = np.ascontiguousarray(mask, dtype=np.float32).reshape(self._group * S, end)
        if end > self._rope_rows:
            self._grow_rope(min(max(2 * self._rope_rows, end), max(c.max_positions, end)))
        cos, sin = self.cos[positions], self.sin[positions]
        x = np.asarray(self.embed[tokens], dtype=np.float32)
        if c.embed_scale != 1.0:
            x = x * np.float32(c.embed_scale)
        if self.native is not None:
            mask2d = mask
            local = None
            if c.local_layers:
                local = (self.cos_local[positions], self.sin_local[positions],
                         self._window(mask2d, positions, start, end))
            if self.fused is not None and S <= self.fused.rows:
                return self.fused(np.ascontiguousarray(x), cos, sin, mask2d, cache.k, cache.v, start,
                                  exact=self.exact, local=local, prompt=self._prompt)
            x = self._native_layers(x, cos, sin, cache, mask2d, local)
            return self.native.rmsnorm(x, self.norm, c.rms_eps)
        x = self._reference_layers(x, cos, sin, cache, mask)
        return ref.rmsnorm(x, self.norm, c.rms_eps)

    def _window(self, mask2d: np.ndarray | None, positions: np.ndarray, start: int, end: int
                ) -> np.ndarray | None:
        """The local layers' additive mask: ``mask2d`` (or all visible) with every key at least
        ``sliding_window`` positions behind its row's token hidden; None when none is."""
        W, S = self.config.sliding_window, len(positions)
        keys = np.concatenate([np.arange(start), positions])          # a key's position: a tree's by depth
        hide = (positions[:, None] - keys[None, :]) >= W
        if not hide.any():
            return mask2d
        add = np.tile(np.where(hide, np.float32(-np.inf), np.float32(0)), (self._group, 1))
        return np.ascontiguousarray(add if mask2d is None else mask2d + add)

    def _native_layers(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, cache: KVCache,
                       mask2d: np.ndarray | None, local=None) -> np.ndarray:
        """The layers with the native kernel doing everything, prefill chunks included: ~6 calls
        per layer instead of ~25 torch ops (``kernels/fused.py`` makes them one call for passes
        of up to 64 tokens). Every row of every kernel is computed alone, so a token's KV and
        hidden state never depend on the other rows of its pass: tree rows equal plain steps, and
        a prompt prefilled in any chunking (or partly reused from an earlier request) gives the
        same bits. (torch's flash attention, used here for chunks over 64 tokens before, did not:
        a warm request's 1-token suffix then differed from the cold chunk. The native attention
        is also faster there: 1,400-token prompt in 256-token chunks, 200 against 156 tok/s.)"""
        c, k = self.config, self.native
        S = x.shape[0]
        start, end = cache.length, cache.length + S
        x = np.ascontiguousarray(x)
        locals_ = set(c.local_layers)
        for i, L in enumerate(self.layers):
            cs, sn, mk = local if i in locals_ else (cos, sin, mask2d)
            qkv = k.linear(k.rmsnorm(x, L.ln_in, c.rms_eps), L.wqkv, L.bqkv, exact=self.exact, prompt=self._prompt)
            q = k.rope_split(qkv, cs, sn, c.num_heads, cache.k[i], cache.v[i], start, c.head_dim ** -0.5,
                             L.q_norm, L.k_norm, c.rms_eps)
            q = q.reshape(c.num_kv_heads, self._group * S, c.head_dim)   # GQA: the group folded into rows
            o = k.attention(q, cache.k[i], cache.v[i], end, mk, tokens=S, scaled=True, pass_keys=S)
            x = self._add(k, o, L.wo, L.post_attn, x)
            gu = k.linear(k.rmsnorm(x, L.ln_post, c.rms_eps), L.wgu, exact=self.exact, prompt=self._prompt)
            act = k.gelu_mul(gu) if c.act == "gelu_tanh" else k.silu_mul(gu)
            x = self._add(k, act, L.wdown, L.post_ffn, x)
        return x

    def _add(self, k, h: np.ndarray, w, norm: np.ndarray | None, x: np.ndarray) -> np.ndarray:
        """x + h @ w.T, or x + RMSNorm(h @ w.T) with gemma3's post norms (forward.c's project_add)."""
        if norm is None:
            return k.linear(h, w, residual=x, exact=self.exact, prompt=self._prompt)
        x += k.rmsnorm(k.linear(h, w, exact=self.exact, prompt=self._prompt), norm, self.config.rms_eps)
        return x

    def _reference_layers(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, cache: KVCache,
                          mask: np.ndarray | None) -> np.ndarray:
        """llama/qwen2 layers in numpy's fp32 arithmetic (``reference.py``), K/V into the cache
        (fp32 values, or rounded once to fp16 as the native kernels write them)."""
        c = self.config
        S = x.shape[0]
        start, end = cache.length, cache.length + S
        lin = self.linear
        for i, L in enumerate(self.layers):
            qkv = lin(ref.rmsnorm(x, L.ln_in, c.rms_eps), L.wqkv, L.bqkv)
            q = qkv[:, :self._q].reshape(S, c.num_heads, c.head_dim).transpose(1, 0, 2)
            k = qkv[:, self._q:self._q + self._kv].reshape(S, c.num_kv_heads, c.head_dim).transpose(1, 0, 2)
            v = qkv[:, self._q + self._kv:].reshape(S, c.num_kv_heads, c.head_dim).transpose(1, 0, 2)
            q, k = ref.rope(q, cos, sin), ref.rope(k, cos, sin)
            cache.k[i, :, start:end] = k
            cache.v[i, :, start:end] = v
            # GQA without copying K/V: fold each kv head's query group into the sequence axis
            q = q.reshape(c.num_kv_heads, self._group * S, c.head_dim)
            keys = cache.k[i, :, :end].astype(np.float32, copy=False)
            values = cache.v[i, :, :end].astype(np.float32, copy=False)
            o = ref.attention(q, keys, values, mask)
            o = o.reshape(c.num_heads, S, c.head_dim).transpose(1, 0, 2).reshape(S, self._q)
            x = x + lin(o, L.wo)
            gu = lin(ref.rmsnorm(x, L.ln_post, c.rms_eps), L.wgu)
            g, u = np.split(gu, 2, axis=-1)
            x = x + lin(ref.silu(g) * u, L.wdown)
        return x

    def head_logits(self, hidden: np.ndarray, rows: int) -> np.ndarray:
        """Logits [S, rows] over the first ``rows`` vocabulary ids: what calibration ranks at every
        prompt position. They read the head's own first rows in place (no copy: the fp32 subset
        calibration gathered per request was 54 MB for a 3072-wide model), and with the native
        kernel take decoding's integer products on 8-bit activations: ~2x the fp32 product
        in 256-row prefill chunks (12 vs 23 ms for SmolLM2's 4096 x 576, 15 vs 27 ms for
        Gemma-3-270M's; drafts only steer what is verified, so any arithmetic would do)."""
        head = self._ranked.get(rows)
        if head is None:
            head = self._ranked[rows] = (self._packer.first_rows(self.lm_head, rows) if self._packer is not None
                                         else self.lm_head[:rows])
        if self._packer is not None:
            return self._packer.linear(hidden, head, exact=False)[:, :rows]
        return self.linear(hidden, head)

    def logits(self, hidden: np.ndarray) -> np.ndarray:
        if self.native is not None and not self.exact:
            return self.native.linear(hidden, self.lm_head, exact=False)
        return self.linear(hidden, self.lm_head)
