"""The decoder layer's arithmetic in plain numpy (fp32): the reference the native kernels are
checked against at load, and the layers a model runs without them (no C compiler, or a CPU with
no kernels). numpy rather than torch: importing torch costs the engine's process ~226 MB resident,
more than the embedded model and its KV cache together."""
from __future__ import annotations

import numpy as np


def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """x @ w.T + b in fp32 (numpy's BLAS)."""
    y = np.ascontiguousarray(x, dtype=np.float32) @ np.asarray(w, dtype=np.float32).T
    return y if b is None else y + b


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps)))


def silu(x: np.ndarray) -> np.ndarray:
    return x / (np.float32(1) + np.exp(-x))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    c = np.float32(np.sqrt(2.0 / np.pi))
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate the last axis's two halves (the GPT-NeoX layout llama's checkpoints use)."""
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis in float32 (the max subtracted first; -inf gives 0)."""
    return softmax_in_place(np.array(x, dtype=np.float32))


def softmax_in_place(x: np.ndarray) -> np.ndarray:
    """``softmax`` of a float32 array, computed in it."""
    x -= x.max(-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(-1, keepdims=True)
    return x


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None,
              scale: float | None = None) -> np.ndarray:
    """softmax(q k^T * scale + mask) v for q [H, R, D], k/v [H, L, D], an additive mask [R, L]."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = (q @ np.swapaxes(k, -1, -2)) * np.float32(scale)
    if mask is not None:
        scores = scores + mask
    return softmax(scores) @ v
