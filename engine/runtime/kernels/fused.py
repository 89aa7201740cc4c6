"""One native call per forward pass (``forward.c``): the model described once, at load, in the
header's ``struct hexa_model``, and scratch buffers allocated once for the largest pass."""
from __future__ import annotations

import ctypes

import torch

from .binding import HEADER

ROWS = HEADER.constants["HEXA_FORWARD_ROWS"]
_Layer, _Model = HEADER.structs["hexa_layer"], HEADER.structs["hexa_model"]
_SLOTS = ("wqkv", "wo", "wgu", "wdown")


def kv_f16(k: torch.Tensor, v: torch.Tensor) -> int:
    """1 for an fp16 cache, 0 for fp32 (what the kernels take)."""
    if k.dtype != v.dtype or k.dtype not in (torch.float16, torch.float32):
        raise ValueError("the KV cache must be fp16 or fp32, K and V alike")
    return int(k.dtype == torch.float16)


def _weight(w) -> tuple[int, int]:
    """(pointer, bits) of a PackedWeight: its codes when it has them, else its fp32 panels."""
    if w.quant is not None:
        return w.quant.data_ptr(), w.bits
    return w.data.data_ptr(), 0


class FusedForward:
    """Runs a pass of at most ``ROWS`` tokens through every layer of a ``CompactTransformer``
    whose weights the native kernel packed. The struct points into the model's tensors: they
    must not be replaced while this object lives (the transformer owns both)."""
    rows = ROWS   # tokens per pass up to which the transformer runs it (every step and tree)

    def __init__(self, kernel, config, layers, norm: torch.Tensor):
        self.fn = kernel.fn
        table = (_Layer * len(layers))()
        local = set(config.local_layers)
        for i, (entry, L) in enumerate(zip(table, layers)):
            entry.ln_in, entry.ln_post = L.ln_in.data_ptr(), L.ln_post.data_ptr()
            for n in ("bqkv", "q_norm", "k_norm", "post_attn", "post_ffn"):
                v = getattr(L, n)
                setattr(entry, n, v.data_ptr() if v is not None else None)
            entry.local = int(i in local)
            for slot in _SLOTS:
                ptr, bits = _weight(getattr(L, slot))
                setattr(entry, slot, ptr)
                setattr(entry, slot + "_bits", bits)
        self._table = table
        self.model = _Model(layers=len(layers), hidden=config.hidden_size, heads=config.num_heads,
                            kv_heads=config.num_kv_heads, head_dim=config.head_dim, ffn=layers[0].wdown.shape[1],
                            act=int(config.act == "gelu_tanh"), eps=config.rms_eps, qscale=config.head_dim ** -0.5,
                            layer=ctypes.cast(table, ctypes.POINTER(_Layer)), norm=norm.data_ptr(),
                            threads=kernel.threads)
        self._ref = ctypes.byref(self.model)
        self.scratch = torch.empty(self.fn["hexa_forward_scratch"](self._ref, ROWS), dtype=torch.float32)

    def __call__(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None,
                 k_cache: torch.Tensor, v_cache: torch.Tensor, start: int, exact: bool = True,
                 local: tuple | None = None) -> torch.Tensor:
        """x [S, hidden] (consumed: it becomes the residual stream), cos/sin [S, head_dim], mask
        additive [group*S, start+S] or None; k/v_cache [layers, kv_heads, capacity, head_dim]
        contiguous; ``local``: (cos, sin, mask) of the sliding-window layers. ``exact``: fp32
        arithmetic throughout; else the decoding arithmetic (codes times 8-bit activations).
        Returns the final normed hidden states [S, hidden]."""
        S = x.shape[0]
        if S > ROWS or not (x.is_contiguous() and k_cache.is_contiguous() and v_cache.is_contiguous()):
            raise ValueError(f"fused forward: at most {ROWS} contiguous rows and a contiguous cache")
        self.model.cache_layer_stride, self.model.cache_head_stride = k_cache.stride(0), k_cache.stride(1)
        self.model.kv_f16 = kv_f16(k_cache, v_cache)
        out = torch.empty_like(x)
        cos, sin = cos.contiguous(), sin.contiguous()
        lc, ls, lm = (t.contiguous() if t is not None else None for t in (local or (cos, sin, mask)))
        self.fn["hexa_forward"](self._ref, x.data_ptr(), cos.data_ptr(), sin.data_ptr(),
                                None if mask is None else mask.data_ptr(), lc.data_ptr(), ls.data_ptr(),
                                None if lm is None else lm.data_ptr(), S, start,
                                k_cache.data_ptr(), v_cache.data_ptr(), self.scratch.data_ptr(), out.data_ptr(),
                                int(exact))
        return out
