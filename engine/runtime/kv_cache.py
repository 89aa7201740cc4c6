"""A preallocated KV cache owned by the engine.

Layout per tensor: [layers, kv_heads, capacity, head_dim]. A forward pass writes its S new entries at
slots [length, length + S) without advancing ``length``; the caller then ``commit``s all of them or
an arbitrary subset (the accepted path of a draft tree), which is moved to the front.
"""
from __future__ import annotations

import numpy as np


class KVCache:
    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int,
                 dtype=np.float32):
        shape = (layers, kv_heads, capacity, head_dim)
        self.k = np.zeros(shape, dtype=dtype)
        self.v = np.zeros(shape, dtype=dtype)
        self.capacity = capacity
        self.length = 0

    def room(self) -> int:
        return self.capacity - self.length

    def commit(self, n_new: int, keep: list[int] | np.ndarray | None = None) -> None:
        """Keep all ``n_new`` pending entries, or only those at offsets ``keep`` (ascending)."""
        if keep is None:
            self.length += n_new
            return
        keep = np.asarray(keep, dtype=np.int64)
        n = int(keep.size)
        if n and not np.array_equal(keep, np.arange(n)):
            src = keep + self.length
            dst = slice(self.length, self.length + n)
            self.k[:, :, dst] = self.k[:, :, src]
            self.v[:, :, dst] = self.v[:, :, src]
        self.length += n

    def truncate(self, length: int) -> None:
        self.length = min(self.length, length)

    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes
