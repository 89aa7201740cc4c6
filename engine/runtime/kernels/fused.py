"""One native call per forward pass (``forward.c``): the model described once, at load, in the
header's ``struct hexa_model``, and scratch buffers allocated once for the largest pass."""
from __future__ import annotations

import ctypes

import numpy as np

from .binding import HEADER
from .arrays import contiguous, ptr, strides

ROWS = HEADER.constants["HEXA_FORWARD_ROWS"]
_Layer, _Model = HEADER.structs["hexa_layer"], HEADER.structs["hexa_model"]
_SLOTS = ("wqkv", "wo", "wgu", "wdown")


def kv_f16(k: np.ndarray, v: np.ndarray) -> int:
    """1 for an fp16 cache, 0 for fp32 (what the kernels take)."""
    if k.dtype != v.dtype or k.dtype not in (np.float16, np.float32):
        raise ValueError("the KV cache must be fp16 or fp32, K and V alike")
    return int(k.dtype == np.float16)


def _weight(w) -> tuple[int, int]:
    """(pointer, bits) of a PackedWeight: its codes when it has them, else its fp32 panels."""
    if w.quant is not None:
        return ptr(w.quant), w.bits
    return ptr(w.data), w.panel_bits


class FusedForward:
    """Runs a pass of at most ``ROWS`` tokens through every layer of a ``CompactTransformer``
    whose weights the native kernel packed. The struct points into the model's tensors: they
    must not be replaced while this object lives (the transformer owns both)."""
    rows = ROWS   # tokens per pass up to which the transformer runs it (every step and tree)

    def __init__(self, kernel, config, layers, norm: np.ndarray):
        self.fn = kernel.fn
        table = (_Layer * len(layers))()
        local = set(config.local_layers)
        for i, (entry, L) in enumerate(zip(table, layers)):
            entry.ln_in, entry.ln_post = ptr(L.ln_in), ptr(L.ln_post)
            for n in ("bqkv", "q_norm", "k_norm", "post_attn", "post_ffn"):
                v = getattr(L, n)
                setattr(entry, n, ptr(v))
            entry.local = int(i in local)
            for slot in _SLOTS:
                address, bits = _weight(getattr(L, slot))
                setattr(entry, slot, address)
                setattr(entry, slot + "_bits", bits)
        self._table = table
        self.model = _Model(layers=len(layers), hidden=config.hidden_size, heads=config.num_heads,
                            kv_heads=config.num_kv_heads, head_dim=config.head_dim, ffn=layers[0].wdown.shape[1],
                            act=int(config.act == "gelu_tanh"), eps=config.rms_eps, qscale=config.head_dim ** -0.5,
                            layer=ctypes.cast(table, ctypes.POINTER(_Layer)), norm=ptr(norm),
                            threads=kernel.threads)
        self._ref = ctypes.byref(self.model)
        self.scratch = np.empty(self.fn["hexa_forward_scratch"](self._ref, ROWS), dtype=np.float32)

    def __call__(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, mask: np.ndarray | None,
                 k_cache: np.ndarray, v_cache: np.ndarray, start: int, exact: bool = True,
                 local: tuple | None = None, prompt: bool = False) -> np.ndarray:
        """x [S, hidden] (consumed: it becomes the residual stream), cos/sin [S, head_dim], mask
        additive [group*S, start+S] or None; k/v_cache [layers, kv_heads, capacity, head_dim]
        contiguous; ``local``: (cos, sin, mask) of the sliding-window layers. ``exact``: fp32
        arithmetic throughout; else the decoding arithmetic (codes times 8-bit activations), or
        with ``prompt`` the prompt rows' (``hexa_linear_prefill``: bf16 on AMX tiles, per-256 scales on the 512-bit tiles). Returns the final normed hidden states [S, hidden]."""
        S = x.shape[0]
        if S > ROWS or not (x.flags.c_contiguous and k_cache.flags.c_contiguous and v_cache.flags.c_contiguous):
            raise ValueError(f"fused forward: at most {ROWS} contiguous rows and a contiguous cache")
        self.model.cache_layer_stride, self.model.cache_head_stride = strides(k_cache)[:2]
        self.model.kv_f16 = kv_f16(k_cache, v_cache)
        out = np.empty_like(x)
        cos, sin = contiguous(cos), contiguous(sin)
        lc, ls, lm = (contiguous(t) for t in (local or (cos, sin, mask)))
        self.fn["hexa_forward"](self._ref, ptr(x), ptr(cos), ptr(sin), ptr(mask), ptr(lc), ptr(ls), ptr(lm), S, start,
                                ptr(k_cache), ptr(v_cache), ptr(self.scratch), ptr(out),
                                1 if exact else 2 if prompt else 0)
        return out
