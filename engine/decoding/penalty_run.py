"""Applying ``Penalties`` (their definitions: ``engine/decoding/penalties.py``) to the logits of a prompt's
next token, or of every node of a draft tree after that node's own path."""
from __future__ import annotations

import math

import numpy as np

from .penalties import Penalties

_FLOAT_MAX_LOG = 88.7228391                # log of float32's max: caps DRY's exponent (as llama.cpp)


def counts_penalty(logits: np.ndarray, counts: np.ndarray, p: Penalties) -> np.ndarray:
    """llama.cpp's penalties on logits of tokens seen ``counts`` (same shape, >= 0) times
    (float32 in, float32 out)."""
    seen = counts > 0
    f = logits.dtype.type
    scaled = np.where(logits <= 0, logits * f(p.repeat_penalty), logits / f(p.repeat_penalty))
    out = scaled - counts * f(p.frequency_penalty) - seen.astype(logits.dtype) * f(p.presence_penalty)
    return np.where(seen, out, logits)


def dry_matches(ctx: np.ndarray, rep_limit: int, allowed: int) -> dict[int, int]:
    """token -> the longest repeat emitting it would extend (only those >= ``allowed``).

    For each earlier position j, the length of the longest common suffix of ctx[:j+1] and ctx
    (capped at ``rep_limit``); ctx[j+1] would extend it. The candidates narrow one offset at a
    time, so the cost is the context's length plus the matches' total length."""
    last = len(ctx) - 1
    cand = np.flatnonzero(ctx[:last] == ctx[last])
    best: dict[int, int] = {}
    t = 1
    while cand.size and t < rep_limit:
        ok = cand >= t
        ok[ok] = ctx[cand[ok] - t] == ctx[last - t]
        if t >= allowed:
            for j in cand[~ok].tolist():        # their match ends here: length t
                tok = int(ctx[j + 1])
                if best.get(tok, 0) < t:
                    best[tok] = t
        cand = cand[ok]
        t += 1
    if t >= allowed:
        for j in cand.tolist():                 # still matching at the cap
            tok = int(ctx[j + 1])
            if best.get(tok, 0) < t:
                best[tok] = t
    return best


class PenaltyRun:
    """One request's penalties, advanced by the emitted tokens (``commit``)."""

    def __init__(self, p: Penalties, context: list[int], breakers: frozenset[int] = frozenset()):
        self.p = p
        self.breakers = breakers
        self._buf = np.zeros(max(64, 2 * len(context)), dtype=np.int64)
        self._n = 0
        self._last_break = -1                   # position of the latest breaker in the context
        self.commit(context)

    @property
    def seq(self) -> np.ndarray:
        return self._buf[:self._n]

    def commit(self, tokens: list[int]) -> None:
        if self._n + len(tokens) > len(self._buf):
            self._buf = np.concatenate([self._buf, np.zeros(len(self._buf) + len(tokens), dtype=np.int64)])
        for t in tokens:
            if t in self.breakers:
                self._last_break = self._n
            self._buf[self._n] = t
            self._n += 1

    def first(self, logits: np.ndarray) -> np.ndarray:
        """The prefill's last logits (the first token's) penalised."""
        return self.apply(logits[None], [[]])[0]

    def apply(self, logits: np.ndarray, paths: list[list[int]]) -> np.ndarray:
        """Row i of ``logits`` penalised after the context + ``paths[i]`` (a node's drafts), in
        place (a copy of a step's 33 x 49k logits cost more than the rest: 2.5 MB touched anew)."""
        if self.p.counts_active:
            logits = self._counts(logits, paths)
        if self.p.dry_active:
            logits = self._dry(logits, paths)
        return logits

    def apply_tree(self, logits: np.ndarray, tree) -> np.ndarray:
        """Every node of a draft tree penalised after its own path (the root is already emitted)."""
        paths: list[list[int]] = [[]]
        for i in range(1, tree.size):
            paths.append(paths[tree.parent_list[i]] + [tree.token_list[i]])
        return self.apply(logits, paths)

    def _counts(self, logits: np.ndarray, paths: list[list[int]]) -> np.ndarray:
        n_last = self.p.repeat_last_n
        seq = self.seq
        base = seq if n_last < 0 else seq[max(0, self._n - n_last):]
        if n_last > 0:   # a path longer than the window fills it alone
            paths = [pth[-n_last:] for pth in paths]
        # a row's drafts push as many of the window's oldest tokens out of it
        drops = [0 if n_last < 0 else max(0, len(base) + len(pth) - n_last) for pth in paths]
        path_toks = np.asarray([t for pth in paths for t in pth], dtype=np.int64)
        # the tokens in any row's window, as columns 0..k-1
        toks, inv = np.unique(np.concatenate([base, path_toks]), return_inverse=True)
        inv = inv.reshape(-1)
        k = len(toks)
        if k == 0:
            return logits
        base_col, path_col = inv[:len(base)], inv[len(base):]
        counts = np.tile(np.bincount(base_col, minlength=k).astype(np.float32), (len(paths), 1))
        if len(path_col):
            rows = np.array([i for i, pth in enumerate(paths) for _ in pth], dtype=np.int64)
            np.add.at(counts, (rows, path_col), np.float32(1.0))
        max_drop = max(drops)
        if max_drop:
            dropped = np.zeros((max_drop + 1, k), dtype=np.float32)
            dropped[np.arange(1, max_drop + 1), base_col[:max_drop]] = 1.0
            counts -= dropped.cumsum(0)[np.array(drops, dtype=np.int64)]
        logits[:, toks] = counts_penalty(logits[:, toks].astype(np.float32), counts, self.p).astype(logits.dtype)
        return logits

    def _dry(self, logits: np.ndarray, paths: list[list[int]]) -> np.ndarray:
        p = self.p
        seq = self.seq
        max_exp = int(_FLOAT_MAX_LOG / math.log(p.dry_base)) if p.dry_base > 1.000001 else 0
        for i, pth in enumerate(paths):
            ctx = np.concatenate([seq, np.asarray(pth, dtype=np.int64)]) if pth else seq
            if p.dry_last_n > 0:
                ctx = ctx[-p.dry_last_n:]
            if len(ctx) <= p.dry_allowed_length:
                continue
            # the repeat may not reach back past the latest breaker
            brk = [k for k, t in enumerate(pth) if t in self.breakers]
            at = self._n + brk[-1] if brk else self._last_break
            start = self._n + len(pth) - len(ctx)
            rep_limit = len(ctx) if at < start else self._n + len(pth) - 1 - at
            if rep_limit < p.dry_allowed_length:
                continue
            best = dry_matches(ctx, rep_limit, p.dry_allowed_length)
            best = {t: m for t, m in best.items() if t not in self.breakers}
            if not best:
                continue
            toks = np.array(list(best), dtype=np.int64)
            exps = [min(m - p.dry_allowed_length, max_exp) if max_exp > 0 else m - p.dry_allowed_length
                    for m in best.values()]
            logits[i, toks] -= np.array([p.dry_multiplier * p.dry_base ** e for e in exps], dtype=logits.dtype)
        return logits
