"""In-context distribution calibration (paper Technique 2).

Context drafts are rejected early when the model phrases things differently from the human
text.  After prefill the model has already told us, at every prompt position, what *it* would
write next.  We turn that into a small n-gram-like model of the model's own distribution:

  Sample  for each position i, take the top-k successors t of context token c_i with p >= the
          threshold; aggregate them per short context key (c_i) and (c_{i-1}, c_i), averaging
          over the key's occurrences (so P(t | key) is a proper conditional estimate).
  Search  from a key (on its first lookup), expand successors repeatedly: after t, the next predictions are those
          made at *occurrences of t in the context* (backing off from (prev, t) to (t,)).  The
          expansion is best-first by cumulative probability under a node cap, which keeps the
          highest-probability part of the depth-first tree the paper describes.

The result is a forest stored in flat arrays (token, parent, step prob), one tree per key.
Drafting looks up the last 1..order generated tokens and returns root-to-leaf paths.
"""
from __future__ import annotations

import heapq
import time
from array import array
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass
class CalibrationConfig:
    """The algorithm's knobs; which values a method uses is ``engine/decoding/calibration_policy.py``'s choice."""
    k: int = 4                # successors per position read from the top-k view
    p_threshold: float = 0.1  # Sample: keep a successor only with p >= this (and per step after averaging)
    min_cum: float = 0.02     # Search: stop a path once its probability product falls below this
    max_depth: int = 8
    max_nodes: int = 24       # per context key
    order: int = 2            # context keys of length 1..order


@dataclass
class CalibrationStats:
    build_ms: float
    prompt_tokens: int
    keys: int
    nodes: int
    nbytes: int

    @property
    def ms_per_token(self) -> float:
        return self.build_ms / max(1, self.prompt_tokens)


class CalibratedTree:
    def __init__(self, config: CalibrationConfig) -> None:
        self.config = config
        self.tok = array("i")
        self.parent = array("i")   # -1 for depth-1 nodes (their parent is the key itself)
        self.prob = array("f")     # step probability
        self.roots: dict[tuple[int, ...], tuple[int, int] | None] = {}   # key -> [start, end) node range, once searched
        self._succ: dict[tuple[int, ...], list[tuple[float, int]] | None] = {}   # key -> [(P(t | key), t)], best first, once looked up
        self._tables: list = []    # per key length: ``_sample``'s index and lists
        self._radix = 1            # key codes: a key's tokens as digits of this base
        # lookup's paths by (start, end, max_paths): a tree's paths never change once searched,
        # and the same contexts come back step after step
        self._paths: dict[tuple[int, int, int], list[tuple[list[int], list[float]]]] = {}
        self.stats = CalibrationStats(0.0, 0, 0, 0, 0)

    @classmethod
    def build(cls, prompt_ids: Sequence[int] | np.ndarray, topk_ids: np.ndarray,
              topk_probs: np.ndarray, config: CalibrationConfig | None = None) -> "CalibratedTree":
        cfg = config or CalibrationConfig()
        t0 = time.perf_counter()
        self = cls(cfg)
        prompt = np.asarray(prompt_ids, dtype=np.int64).reshape(-1)
        T = len(prompt)
        if topk_ids.shape[0] != T or topk_probs.shape != topk_ids.shape:
            raise ValueError(f"top-k view must be [T={T}, k], got {tuple(topk_ids.shape)} / {tuple(topk_probs.shape)}")
        k = min(cfg.k, topk_ids.shape[1])
        ids = np.asarray(topk_ids[:, :k], dtype=np.int64)
        # float64, as the sums and the averages are: the per-token loop this replaced added
        # Python floats, in position order, which np.bincount's sums repeat bit for bit
        probs = np.asarray(topk_probs[:, :k], dtype=np.float32).astype(np.float64)
        self._radix = int(prompt.max()) + 1 if T else 1
        if self._radix ** cfg.order >= 2 ** 62:
            raise ValueError(f"calibration: keys of {cfg.order} tokens over {self._radix} ids do not fit 64 bits")
        # ---- Sample: P(t | key) averaged over the key's occurrences, for every key at once ----
        # (numpy: the Python loop over positions took 4 ms per 1,000 prompt tokens before the
        # first token, 0.4% of SmolLM2's prefill; this takes ~1.3 ms; 2026-11-29)
        self._tables = [self._sample(prompt, ids, probs, o, cfg.p_threshold) for o in range(1, cfg.order + 1)]
        keys = sum(len(table[0]) for table in self._tables)
        self.stats = CalibrationStats((time.perf_counter() - t0) * 1e3, T, keys, 0, 0)
        return self

    def _sample(self, prompt: np.ndarray, ids: np.ndarray, probs: np.ndarray, order: int, thr: float
                ) -> tuple[dict[int, int], list[int], list[int], list[float]]:
        """The keys of ``order`` tokens with a successor, as ({key code: i}, bounds: key i's
        successors are entries [bounds[i], bounds[i + 1]) of the next two lists, successor ids,
        their averaged probabilities), each key's successors best first
        (the larger id first among equal probabilities). Python containers, not arrays: a key is
        looked up at its first draft, in the decoding loop, where numpy's searchsorted and
        slicing took 3-6 us a key and this takes 2-3.5."""
        T, k = ids.shape
        if T < order:
            return {}, [0], [], []
        code = np.zeros(T - order + 1, dtype=np.int64)   # the key ending at position i >= order - 1
        for j in range(order):
            code = code * self._radix + prompt[j:T - order + 1 + j]
        keys, key_of, occurrences = np.unique(code, return_inverse=True, return_counts=True)
        rows = slice(order - 1, T)
        keep = probs[rows] >= thr
        key_at = np.broadcast_to(key_of[:, None], keep.shape)[keep]          # row-major: position order
        succ, p = ids[rows][keep], probs[rows][keep]
        pair, at = np.unique(key_at * (int(ids.max(initial=0)) + 1) + succ, return_inverse=True)
        total = np.bincount(at, weights=p, minlength=len(pair))              # summed in position order
        first = np.zeros(len(pair), dtype=np.int64)
        first[at] = np.arange(len(at))                                        # any entry of each pair
        pair_key, pair_succ = key_at[first], succ[first]
        mean = total / occurrences[pair_key]
        ok = mean >= thr
        pair_key, pair_succ, mean = pair_key[ok], pair_succ[ok], mean[ok]
        order_ = np.lexsort((-pair_succ, -mean, pair_key))
        pair_key, pair_succ, mean = pair_key[order_], pair_succ[order_], mean[order_]
        used, start = np.unique(pair_key, return_index=True)
        bounds = np.append(start, len(pair_key)).tolist()
        index = dict(zip(keys[used].tolist(), range(len(used))))   # key i's entries: bounds[i:i + 2]
        return index, bounds, pair_succ.tolist(), mean.tolist()

    def _successors(self, key: tuple[int, ...]) -> list[tuple[float, int]] | None:
        """[(P(t | key), t)] best first, or None if ``key`` has none (built on first use)."""
        try:
            return self._succ[key]
        except KeyError:
            pass
        found = None
        if 0 < len(key) <= len(self._tables) and all(0 <= t < self._radix for t in key):
            index, bounds, succ, mean = self._tables[len(key) - 1]
            code = 0
            for t in key:
                code = code * self._radix + t
            i = index.get(code)
            if i is not None:
                a, b = bounds[i], bounds[i + 1]
                found = list(zip(mean[a:b], succ[a:b]))
        self._succ[key] = found
        return found

    def keys(self) -> list[tuple[int, ...]]:
        """Every context key with a successor (each one's tree is searched on first use)."""
        out = []
        for order, (index, *_) in enumerate(self._tables, start=1):
            for code in index:
                key = []
                for _ in range(order):
                    code, t = divmod(code, self._radix)
                    key.append(t)
                out.append(tuple(reversed(key)))
        return out

    def tree(self, key: tuple[int, ...]) -> tuple[int, int] | None:
        """The [start, end) node range of ``key``'s tree, searched now if it was not yet; None if
        the key has none. Searching on first use instead of for every key in ``build``: a draft
        looks up one or two keys a step, while a prompt has ~2 keys per token, and searching them
        all was ~2/3 of the time calibration added before the first token (0.06 ms a prompt token
        on the rag prompts, measured with cProfile). The trees are the ones a full build makes."""
        if key in self.roots:
            return self.roots[key]
        first = self._successors(key)
        if first is None:
            return None
        cfg = self.config
        order, max_depth, max_nodes, min_cum = cfg.order, cfg.max_depth, cfg.max_nodes, cfg.min_cum
        tok_a, par_a, prob_a = self.tok, self.parent, self.prob

        def successors(ctx: tuple[int, ...]):
            for o in range(min(order, len(ctx)), 0, -1):   # back off to shorter keys
                s = self._successors(ctx[-o:])
                if s is not None:
                    return s
            return None

        # best-first expansion through occurrences of each successor
        start = len(tok_a)
        heap = []
        tie = 0
        for p, t in first:
            if p >= min_cum:
                heap.append((-p, tie, t, -1, key + (t,), 1))
                tie += 1
        heapq.heapify(heap)
        made = 0
        cum_local: list[float] = []   # cumulative prob of this key's nodes, by local index
        while heap and made < max_nodes:
            negc, _, t, par, ctx, depth = heapq.heappop(heap)
            c0 = -negc
            idx = len(tok_a)
            tok_a.append(t)
            par_a.append(par)
            prob_a.append(c0 if par < 0 else c0 / cum_local[par - start])
            cum_local.append(c0)
            made += 1
            if depth < max_depth:
                nxt = successors(ctx[-order:])
                if nxt:
                    for p, t2 in nxt:
                        c = c0 * p
                        if c < min_cum:
                            break       # sorted: the rest is smaller still
                        heapq.heappush(heap, (-c, tie, t2, idx, ctx[-order + 1:] + (t2,) if order > 1 else (t2,), depth + 1))
                        tie += 1
        found = (start, len(tok_a)) if made else None
        self.roots[key] = found
        self.stats.nodes = len(tok_a)
        self.stats.nbytes += (tok_a.itemsize + par_a.itemsize + prob_a.itemsize) * made
        self.stats.nbytes += 56 + 8 * len(key) + 120   # tuple + dict slot + range tuple
        return found

    def lookup(self, context: Sequence[int], max_paths: int = 8) -> list[tuple[list[int], list[float]]]:
        """Calibrated continuations after ``context`` (the last generated tokens), as
        (tokens, step probabilities) root-to-leaf paths, most probable leaf first (the lists
        are shared by every lookup that finds them: read them, do not change them)."""
        rng = None
        for o in range(min(self.config.order, len(context)), 0, -1):
            rng = self.tree(tuple(context[-o:]))
            if rng is not None:
                break
        if rng is None:
            return []
        found = self._paths.get((*rng, max_paths))
        if found is None:
            found = self._paths[(*rng, max_paths)] = self._leaf_paths(*rng, max_paths)
        return found

    def _leaf_paths(self, start: int, end: int, max_paths: int) -> list[tuple[list[int], list[float]]]:
        tok, par, prob = self.tok, self.parent, self.prob
        n = end - start
        has_child = [False] * n
        cum = [0.0] * n
        for j in range(n):
            p = par[start + j]
            if p < 0:
                cum[j] = prob[start + j]
            else:
                has_child[p - start] = True
                cum[j] = cum[p - start] * prob[start + j]
        leaves = sorted((j for j in range(n) if not has_child[j]), key=lambda j: -cum[j])[:max_paths]
        out = []
        for j in leaves:
            toks, ps = [], []
            g = start + j
            while g >= 0:
                toks.append(tok[g])
                ps.append(prob[g])
                g = par[g]
            toks.reverse()
            ps.reverse()
            out.append((toks, ps))
        return out
