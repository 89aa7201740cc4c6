"""Turning logits into the next token: greedy, or sampling with a seed after top-k, min-p,
temperature and top-p (in that order; penalties come before, ``engine/decoding/penalties.py``).

top-k and min-p are llama.cpp's: keep the k highest logits; keep the logits within log(min_p) of
the highest (p >= min_p * p_max before temperature, as llama.cpp applies temperature last). top-p
is kept as hexa has always applied it: on the distribution after temperature. Greedy decoding
ignores all four (none of them changes the argmax).

Everything is float32 numpy, one vocabulary row at a time (a 2-D input is processed row by row,
so a row's distribution does not depend on the rows beside it). Randomness is a
``numpy.random.Generator``: every sampled token costs exactly one uniform draw (``draw``, an
inverse CDF), here and in ``drafting/accept.sample_accept``.
"""
from __future__ import annotations

import math

import numpy as np

from ..runtime.reference import softmax_in_place

_SUBSAMPLE = 8192      # a selection first ranks about this many strided entries (a lower bound)
_TOP_P_FIRST = 256     # top-p first sorts the entries at least as large as the 256th largest
_BLOCK = 1024          # ``draw`` finds the block, then the index within it


def kth_largest(x: np.ndarray, k: int):
    """The k-th largest value of the 1-D ``x`` (1 <= k <= len(x)), counting equal values apart.
    The k-th largest of a strided subsample bounds it from below, so only the entries above that
    bound are partitioned (a selection over the whole 262k vocabulary costs ~2.4 ms, this ~0.3)."""
    n = x.shape[0]
    stride = n // _SUBSAMPLE
    if stride > 1 and n // stride >= 4 * k:
        sub = x[::stride]
        low = np.partition(sub, sub.shape[0] - k)[sub.shape[0] - k]
        x = x[x >= low]          # still holds the k largest: the subsample's k are among them
        n = x.shape[0]
    return np.partition(x, n - k)[n - k]


def topk(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the ``k`` largest entries along the last axis, largest first; equal
    values in ascending index order among those selected (which of several equal values at the
    k-th place are selected is left to ``np.argpartition``)."""
    n = x.shape[-1]
    k = min(k, n)
    idx = np.argpartition(-x, k - 1, axis=-1)[..., :k] if k < n else \
        np.broadcast_to(np.arange(n), x.shape).copy()
    idx.sort(axis=-1)
    vals = np.take_along_axis(x, idx, axis=-1)
    order = np.argsort(-vals, axis=-1, kind="stable")
    return np.take_along_axis(vals, order, axis=-1), np.take_along_axis(idx, order, axis=-1)


def _top_p_row(p: np.ndarray, top_p: float) -> np.ndarray:
    """One distribution cut to the smallest prefix, largest first, whose mass reaches ``top_p``
    (always at least one token), renormalised. Equal probabilities at the cut are kept in
    ascending id order. Only the values are sorted (their descending sequence, hence its float32
    cumulative sum, is the same whatever order equal values take), and first only the largest
    ones: the smallest prefix is usually short, and a full sort of 262k ids costs ~25 ms."""
    sv = None
    if np.count_nonzero(p) > 4 * _TOP_P_FIRST:      # (after top-k, few are left: sort them all)
        head = p[p >= kth_largest(p, _TOP_P_FIRST)]           # a prefix of the sorted values
        sv = np.sort(head)[::-1]
        # keep the smallest prefix whose mass reaches top_p: drop where the mass before reaches it
        drop = np.cumsum(sv) - sv >= top_p
        if not drop.any():
            sv = None
    if sv is None:
        sv = np.sort(p[p > 0])[::-1]      # zeros come last and carry no mass: never needed
        drop = np.cumsum(sv) - sv >= top_p
    j = int(np.argmax(drop)) if drop.any() else sv.shape[0]   # tokens kept; >= 1 as top_p > 0
    cut = sv[j - 1]
    keep = p > cut
    ties = j - int(np.count_nonzero(keep))
    if ties > 0:
        keep[np.flatnonzero(p == cut)[:ties]] = True
    out = np.where(keep, p, np.float32(0.0))
    out /= out.sum()
    return out


def _probs_row(logits: np.ndarray, temperature: float, top_p: float, top_k: int, min_p: float) -> np.ndarray:
    V = logits.shape[0]
    if 0 < top_k < V or min_p > 0.0:
        logits = logits.copy()                       # masked here: the caller's logits stay as they are
    if 0 < top_k < V:
        logits[logits < kth_largest(logits, top_k)] = -np.inf
    if min_p > 0.0:
        logits[logits < logits.max() + np.float32(math.log(min_p))] = -np.inf
    probs = softmax_in_place(logits / np.float32(max(temperature, 1e-5)))
    if top_p < 1.0:
        probs = _top_p_row(probs, top_p)
    return probs


def processed_probs(logits: np.ndarray, temperature: float, top_p: float, top_k: int = 0,
                    min_p: float = 0.0) -> np.ndarray:
    """The distribution plain sampling draws from (last axis = vocabulary), float32."""
    logits = np.asarray(logits, dtype=np.float32)
    if logits.ndim == 1:
        return _probs_row(logits, temperature, top_p, top_k, min_p)
    rows = logits.reshape(-1, logits.shape[-1])
    out = np.empty(rows.shape, dtype=np.float32)
    for i, row in enumerate(rows):
        out[i] = _probs_row(row, temperature, top_p, top_k, min_p)
    return out.reshape(logits.shape)


def draw(weights: np.ndarray, rng: np.random.Generator) -> int:
    """One index drawn with probability proportional to ``weights`` (1-D, >= 0, not all 0), from
    one uniform draw of ``rng`` (inverse CDF); never an index of weight 0. The CDF is walked by
    blocks (float64 sums), then inside one block: a float64 cumulative sum of 262k weights alone
    costs ~5 ms."""
    w = np.asarray(weights)
    n = w.shape[0]
    full = n - n % _BLOCK
    sums = w[:full].reshape(-1, _BLOCK).sum(axis=1, dtype=np.float64)
    if full < n:
        sums = np.append(sums, w[full:].sum(dtype=np.float64))
    cs = np.cumsum(sums)
    total = cs[-1]
    if not total > 0:
        raise ValueError("cannot sample from a distribution with no mass")
    u = rng.random() * total
    b = int(np.searchsorted(cs, u, side="right"))
    if b >= cs.shape[0]:                    # rounding at the very top: the last block with mass
        b = int(np.flatnonzero(sums > 0)[-1])
    block = w[b * _BLOCK:(b + 1) * _BLOCK]
    inner = np.cumsum(block, dtype=np.float64)
    i = int(np.searchsorted(inner, u - (cs[b - 1] if b else 0.0), side="right"))
    if i >= inner.shape[0]:                 # rounding again: the block's last index with weight
        i = int(np.flatnonzero(block > 0)[-1])
    return b * _BLOCK + i


def check_sampling(temperature: float, top_p: float, top_k: int = 0, min_p: float = 0.0) -> None:
    if temperature < 0 or not 0 < top_p <= 1 or top_k < 0 or not 0 <= min_p < 1:
        raise ValueError("temperature must be >= 0, top_p in (0, 1], top_k >= 0 and min_p in [0, 1)")


class RowProbs:
    """``probs[i]``: the processed distribution of ``logits[i]``, computed when first read.
    ``sample_accept`` reads only the rows along the path it walks, a few of a tree's 33."""

    def __init__(self, sampler: "Sampler", logits: np.ndarray):
        self.sampler, self.logits = sampler, logits
        self._rows: dict[int, np.ndarray] = {}

    def __getitem__(self, i: int) -> np.ndarray:
        row = self._rows.get(i)
        if row is None:
            row = self._rows[i] = self.sampler.probs(self.logits[i])
        return row

    def __len__(self) -> int:
        return self.logits.shape[0]


class Sampler:
    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
                 top_k: int = 0, min_p: float = 0.0):
        check_sampling(temperature, top_p, top_k, min_p)
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.min_p = min_p
        self.generator = np.random.default_rng(seed)     # seed None: fresh entropy

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def probs(self, logits: np.ndarray) -> np.ndarray:
        return processed_probs(logits, self.temperature, self.top_p, self.top_k, self.min_p)

    def row_probs(self, logits: np.ndarray) -> RowProbs:
        """``probs`` of each row of ``logits`` [n, V], computed as they are read."""
        return RowProbs(self, logits)

    def pick(self, logits: np.ndarray) -> int:
        """Next token from the logits of one position."""
        if self.greedy:
            return int(np.argmax(logits))
        return draw(self.probs(logits), self.generator)
