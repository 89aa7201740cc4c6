"""The draft tree: merge candidates from all sources, select a subtree, flatten it for verification.

Node 0 is the root = the last committed token; it is fed to the model (its logits come first)
but it is not a draft token.  Each draft node carries an estimated acceptance probability given
its parent was accepted (``step``) and the product along its path (``cum``): the expected number
of accepted draft tokens of a tree is the sum of ``cum`` over its nodes, so with children never
above their parents, picking nodes greedily by ``cum`` is optimal for a node budget.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np


@dataclass(slots=True)
class Candidate:
    tokens: list[int]
    probs: list[float]      # per-token estimated acceptance probability (given the previous token accepted)
    source: str             # one of events.DRAFT_SOURCES


@dataclass
class DraftTree:
    """A flattened, verification-ready tree.  Index 0 is the root; parents precede children.

    tokens  int64[1+n]         feed these (root first)
    depths  int64[1+n]         root 0; position of node i = past_len + depths[i]
    parents int64[1+n]         -1 for the root
    mask    bool[1+n, 1+n]     mask[i, j]: node i may attend node j (j is i or an ancestor of i);
                               the engine adds "every cached past position is visible"
    (numpy arrays)
    """
    tokens: np.ndarray
    depths: np.ndarray
    parents: np.ndarray
    mask: np.ndarray
    sources: list[str]            # per node; "root" for node 0
    cum: list[float]              # estimated cumulative acceptance probability per node (root 1.0)
    token_list: list[int]         # python mirrors, for the acceptance walk
    parent_list: list[int]
    children: list[list[int]] = field(default_factory=list)
    raw_step: list[float] = field(default_factory=list)   # per node: step estimate before the confidence map

    @property
    def size(self) -> int:        # tokens fed, root included
        return len(self.token_list)

    @property
    def n(self) -> int:           # draft tokens
        return len(self.token_list) - 1

    @property
    def max_depth(self) -> int:
        return int(self.depths.max()) if self.size else 0

    def positions(self, past_len: int) -> np.ndarray:
        return self.depths + past_len

    def expected_accepted(self) -> float:
        return sum(self.cum[1:])

    def path_to(self, idx: int) -> list[int]:
        out = []
        while idx >= 0:
            out.append(idx)
            idx = self.parent_list[idx]
        return out[::-1]


def choose_budget(cums_sorted: Sequence[float], cost_curve: Callable[[int], float]) -> int:
    """Tree size n maximizing (1 + sum of top-n cumulative probs) / cost(n + 1).

    ``cost_curve(m)`` is the measured forward cost of feeding m tokens (root + n drafts).  The
    numerator is the expected tokens emitted per step (the bonus token always comes), so the
    ratio is tokens per unit time.  Linear CPU costs favour small trees; a flat static-graph
    cost favours filling the graph.
    """
    best_n, best = 0, 1.0 / cost_curve(1)
    acc = 1.0
    for i, c in enumerate(cums_sorted):
        acc += c
        v = acc / cost_curve(i + 2)
        if v > best:
            best_n, best = i + 1, v
    return best_n


ALPHA0 = 0.01        # EdgeLLM's starting fallback threshold
ALPHA_FLOOR = 1e-4   # the lowest the threshold adapts down to


class AdaptiveCutoff:
    """EdgeLLM self-adaptive fallback: nodes with cumulative confidence < alpha are not drafted.

    After each verification: all drafted tokens accepted -> alpha *= 0.5 (draft deeper);
    otherwise alpha /= tc ** ((n_all - n_ok) / n_all).  With tc < 1 this raises alpha in
    proportion to the rejected fraction (a full rejection doubles it at tc = 0.5).
    """

    def __init__(self, alpha0: float = ALPHA0, tc: float = 0.5, lo: float = ALPHA_FLOOR, hi: float = 0.5) -> None:
        if not 0.0 < tc < 1.0:
            raise ValueError("tc must be in (0, 1)")
        self.alpha, self.tc, self.lo, self.hi = alpha0, tc, lo, hi

    def update(self, n_all: int, n_ok: int) -> float:
        if n_all <= 0:
            return self.alpha
        if n_ok >= n_all:
            self.alpha *= 0.5
        else:
            self.alpha /= self.tc ** ((n_all - n_ok) / n_all)
        self.alpha = min(self.hi, max(self.lo, self.alpha))
        return self.alpha


class ConfidenceMap:
    """Online calibration of step estimates: per source, a histogram of raw estimate -> observed
    acceptance (histogram binning), shrunk toward the raw value by a prior of ``prior`` trials.

    The drafters' heuristics (match length, occurrence ratios, calibrated probabilities) have the
    right order but the wrong scale, and the error differs by range (a 1-token context match is
    much worse than its 0.4; a 0.95 calibrated step is about right). On a steep CPU cost curve
    every over-confident node is paid for, so the tree is sized from the mapped values. Keep one
    map per method across requests (the engine does) so it learns the backend model's habits.
    """

    def __init__(self, bins: int = 10, prior: float = 6.0) -> None:
        self.bins, self.prior = bins, prior
        self.acc: dict[str, list[float]] = {}
        self.n: dict[str, list[float]] = {}

    def _bin(self, p: float) -> int:
        return min(self.bins - 1, max(0, int(p * self.bins)))

    def __call__(self, source: str, p: float) -> float:
        n = self.n.get(source)
        if n is None:
            return p
        b = self._bin(p)
        return (self.acc[source][b] + self.prior * p) / (n[b] + self.prior)

    def ceiling(self, source: str, p: float) -> float:
        """The most ``self(source, q)`` is for any q <= p (a bin's map grows within the bin, so
        each lower bin's most is at its top edge)."""
        n = self.n.get(source)
        if n is None:
            return p
        acc, prior = self.acc[source], self.prior
        b = self._bin(p)
        best = (acc[b] + prior * p) / (n[b] + prior)
        for i in range(b):
            best = max(best, (acc[i] + prior * (i + 1) / self.bins) / (n[i] + prior))
        return best

    def update(self, source: str, p: float, accepted: bool) -> None:
        if source not in self.n:
            self.n[source] = [0.0] * self.bins
            self.acc[source] = [0.0] * self.bins
        b = self._bin(p)
        self.n[source][b] += 1.0
        self.acc[source][b] += 1.0 if accepted else 0.0

    def table(self) -> dict[str, list[tuple[int, float]]]:
        return {s: [(int(self.n[s][b]), round(self.acc[s][b] / self.n[s][b], 2) if self.n[s][b] else -1.0)
                    for b in range(self.bins)] for s in self.n}


class TreeBuilder:
    """Token trie of all candidates, rooted at the last committed token."""

    def __init__(self, root_token: int, confidence: ConfidenceMap | None = None) -> None:
        self.confidence = confidence
        self.raw_step: list[float] = [1.0]
        self.token = [int(root_token)]
        self.parent = [-1]
        self.depth = [0]
        self.kids: list[dict[int, int]] = [{}]
        self.src_p: list[dict[str, float]] = [{}]   # per-source estimate (max within a source)
        # per node: its cum, and whether its children's are known (filled as ``select`` reaches
        # them: most of a trie lies below nodes a CPU-sized tree never takes)
        self._cum: list[float] | None = None
        self._expanded: list[bool] = []

    def __len__(self) -> int:
        return len(self.token) - 1

    def add(self, cand: Candidate, max_depth: int | None = None) -> None:
        node = 0
        toks = cand.tokens if max_depth is None else cand.tokens[:max_depth]
        for tok, p in zip(toks, cand.probs):
            nxt = self.kids[node].get(tok)
            if nxt is None:
                nxt = len(self.token)
                self.token.append(tok)
                self.parent.append(node)
                self.depth.append(self.depth[node] + 1)
                self.kids.append({})
                self.src_p.append({})
                self.kids[node][tok] = nxt
            sp = self.src_p[nxt]
            if p > sp.get(cand.source, -1.0):
                sp[cand.source] = p
            node = nxt
        self._cum = None

    def source_of(self, i: int) -> str:
        return _source_of(self.src_p[i])

    def _lazy(self) -> list[float]:
        """The cum list, started over if candidates were added since (entries of nodes whose
        parent is not expanded yet are not known)."""
        if self._cum is None:
            n = len(self.token)
            self._cum = [1.0] * n
            self.raw_step = [1.0] * n
            self._expanded = [False] * n
        return self._cum

    def _expand(self, node: int) -> None:
        """The step estimates and cums of ``node``'s children (``node``'s cum known): noisy-OR
        across sources (independent sources agreeing is evidence), mapped by the confidence
        map, siblings rescaled so they sum to < 1 (only one token can be the model's)."""
        if self._expanded[node]:
            return
        self._expanded[node] = True
        kids = self.kids[node]
        if not kids:
            return
        conf, src_p, raw, cum = self.confidence, self.src_p, self.raw_step, self._cum
        step = []
        for c in kids.values():
            r = raw[c] = _noisy_or(src_p[c])
            step.append(r if conf is None else _mapped(conf, src_p[c], r))
        if len(step) > 1:
            s = sum(step)
            if s > 0.99:
                f = 0.99 / s
                step = [x * f for x in step]
        at = cum[node]
        for c, x in zip(kids.values(), step):
            cum[c] = at * x

    def cumulative(self) -> list[float]:
        """Every node's estimated probability of being accepted (see ``_expand``)."""
        cum = self._lazy()
        for i in range(len(cum)):      # parents are created before children
            self._expand(i)
        return cum

    def select(self, budget: int, alpha: float = 0.0, max_depth: int | None = None,
               cost_curve: Callable[[int], float] | None = None) -> list[int]:
        """Node ids (parents first) of the chosen subtree, root excluded: best-first by cumulative
        probability, optimal for product-form scores. Nodes with cum < alpha are never taken.
        With ``cost_curve`` the budget is reduced to the throughput-optimal size
        (``choose_budget``'s, found as the nodes are taken). (EdgeLLM's branch pacer, which
        shares the budget between the root's branches by confidence instead, measured 4% slower
        here and was dropped.)"""
        if budget <= 0:
            return []
        return self._greedy(budget, alpha, max_depth, cost_curve)

    def _greedy(self, budget: int, alpha: float, max_depth: int | None,
                cost_curve: Callable[[int], float] | None = None) -> list[int]:
        """Best-first by cum. With ``cost_curve``, stops once no bigger tree can beat the best
        ratio so far (every later node's cum is at most the last one's: a child's is its
        parent's times a step below 1) and returns the best prefix, the one ``choose_budget``
        picks from the whole order: the nodes below the stop are never estimated."""
        cum, kids, depth = self._lazy(), self.kids, self.depth
        self._expand(0)
        heap = [(-cum[c], c) for c in kids[0].values()]
        heapq.heapify(heap)
        out: list[int] = []
        costs = cost_table(cost_curve, budget) if cost_curve is not None else None
        most = min(budget, len(cum) - 1)      # no tree bigger than the trie
        if costs is not None:
            best_n, best, acc = 0, 1.0 / costs[0], 1.0
        while heap and len(out) < budget:
            negc, i = heapq.heappop(heap)
            c = -negc
            if c < alpha:
                break                  # everything left is smaller
            out.append(i)
            if costs is not None:
                acc += c
                v = acc / costs[len(out)]
                if v > best:
                    best_n, best = len(out), v
                if not _may_beat(acc, c, len(out), best, costs, most):
                    break
            if max_depth is None or depth[i] < max_depth:
                self._expand(i)
                for k in kids[i].values():
                    heapq.heappush(heap, (-cum[k], k))
        return out if costs is None else out[:best_n]

    def flatten(self, selected: Sequence[int]) -> DraftTree:
        """Reindex the root + ``selected`` (parents must precede children) into a DraftTree."""
        if not selected:
            return root_only(self.token[0])
        cum = self._lazy()
        if not all(self._expanded[self.parent[i]] for i in selected):
            cum = self.cumulative()
        ids = [0] + list(selected)
        new = {old: k for k, old in enumerate(ids)}
        return assemble([self.token[i] for i in ids], [-1] + [new[self.parent[i]] for i in ids[1:]],
                        ["root"] + [self.source_of(i) for i in ids[1:]], [cum[i] for i in ids],
                        [self.raw_step[i] for i in ids])

    def build(self, budget: int, alpha: float = 0.0, max_depth: int | None = None,
              cost_curve: Callable[[int], float] | None = None) -> DraftTree:
        return self.flatten(self.select(budget, alpha, max_depth, cost_curve))


def cost_table(cost_curve: Callable[[int], float], n: int) -> list[float]:
    """[cost(1), ..., cost(n + 1)]: a verification's cost by drafts fed (kept on a memoizing
    curve, ``CostCurve``, whose values do not change)."""
    memo = getattr(cost_curve, "tables", None)
    table = memo.get(n) if memo is not None else None
    if table is None:
        table = [cost_curve(m) for m in range(1, n + 2)]
        if memo is not None:
            memo[n] = table
    return table


def _may_beat(acc: float, last: float, k: int, best: float, costs: list[float], most: int) -> bool:
    """Whether some tree of more than ``k`` and at most ``most`` drafts could have a better ratio
    than ``best`` when each further draft adds at most ``last`` (the margin keeps float rounding
    on the side of going on)."""
    for n in range(k + 1, most + 1):
        if (acc + (n - k) * last) * (1.0 + 1e-9) / costs[n] > best:
            return True
    return False


def _source_of(src_p: dict[str, float]) -> str:
    if len(src_p) == 1:
        for s in src_p:
            return s
    return max(src_p, key=src_p.get) if src_p else "root"


def _noisy_or(src_p: dict[str, float]) -> float:
    miss = 1.0
    for p in src_p.values():
        miss *= 1.0 - min(max(p, 0.0), 0.999)
    return 1.0 - miss


def _mapped(conf: ConfidenceMap, src_p: dict[str, float], raw: float) -> float:
    return min(0.999, max(0.0, conf(_source_of(src_p), raw)))


def pay_threshold(cost_curve: Callable[[int], float], budget: int) -> float:
    """The least first-step estimate with which some tree of at most ``budget`` drafts beats a
    plain step: ``choose_budget`` takes n > 0 drafts only if (1 + their cums) / cost(n + 1) >
    1 / cost(1), and every node's cum is at most its tree's best first step (later steps are
    below 1, siblings only scaled down), so a best first step at or under min over n of
    (cost(n + 1) / cost(1) - 1) / n means no draft. Kept on a memoizing curve (``CostCurve``)."""
    memo = getattr(cost_curve, "thresholds", None)
    if memo is not None and budget in memo:
        return memo[budget]
    costs = cost_table(cost_curve, budget)     # the table the sized selection reads too
    floor = min((costs[n] / costs[0] - 1.0) / n for n in range(1, budget + 1))
    if memo is not None:
        memo[budget] = floor
    return floor


def pays(first_step: float, floor: float) -> bool:
    # the margin keeps a tie in float rounding on the side of building the tree
    return first_step * (1.0 + 1e-9) > floor


def best_first_step(cands: Sequence[Candidate], confidence: ConfidenceMap | None = None) -> float:
    """The highest step estimate a child of the root gets from ``cands`` (as ``cumulative``
    computes it, before siblings are scaled down)."""
    firsts: dict[int, dict[str, float]] = {}
    for c in cands:
        if c.tokens:
            sp = firsts.setdefault(c.tokens[0], {})
            if c.probs[0] > sp.get(c.source, -1.0):
                sp[c.source] = c.probs[0]
    best = 0.0
    for sp in firsts.values():
        step = _noisy_or(sp)
        best = max(best, _mapped(confidence, sp, step) if confidence is not None else step)
    return best


def first_step_ceiling(caps: dict[str, float], confidence: ConfidenceMap | None = None) -> float:
    """The most ``best_first_step`` can be when each source's first steps are at most
    ``caps[source]``: every source agreeing on one token, mapped by whichever source's map
    gives most."""
    if not caps:
        return 0.0
    raw = _noisy_or(caps)
    if confidence is None:
        return raw
    return min(0.999, max(confidence.ceiling(s, raw) for s in caps))


def assemble(tokens: list[int], parents: list[int], sources: list[str], cum: list[float],
             raw_step: list[float]) -> DraftTree:
    """A DraftTree from per-node lists (index 0 the root, parents before children)."""
    m = len(tokens)
    deps = [0] * m
    children: list[list[int]] = [[] for _ in range(m)]
    for k in range(1, m):
        if not 0 <= parents[k] < k:
            raise ValueError(f"node {k}: its parent {parents[k]} does not precede it")
        deps[k] = deps[parents[k]] + 1
        children[parents[k]].append(k)
    # ancestor-or-self rows: row k = row(parent) + self; built as flat python bools (fast at m <= ~100)
    rows: list[list[bool]] = []
    flat: list[bool] = []
    for k in range(m):
        row = rows[parents[k]].copy() if k else [False] * m
        row[k] = True
        rows.append(row)
        flat.extend(row)
    return DraftTree(
        tokens=np.array(tokens, dtype=np.int64),
        depths=np.array(deps, dtype=np.int64),
        parents=np.array(parents, dtype=np.int64),
        mask=np.array(flat, dtype=np.bool_).reshape(m, m),
        sources=list(sources), cum=list(cum), token_list=list(tokens), parent_list=list(parents),
        children=children, raw_step=list(raw_step),
    )


def subtree(tree: DraftTree, keep: Sequence[int]) -> DraftTree:
    """The nodes ``keep`` of ``tree`` (old indices, ascending, the root included, every kept
    node's parent kept), reindexed: what is left when rejected branches are cut."""
    keep = list(keep)
    if not keep or keep[0] != 0:
        raise ValueError("a subtree keeps the root")
    new = {old: k for k, old in enumerate(keep)}
    parents = [-1]
    for old in keep[1:]:
        if tree.parent_list[old] not in new:
            raise ValueError(f"node {old} is kept without its parent")
        parents.append(new[tree.parent_list[old]])
    raw = tree.raw_step or [1.0] * tree.size
    return assemble([tree.token_list[i] for i in keep], parents, [tree.sources[i] for i in keep],
                    [tree.cum[i] for i in keep], [raw[i] for i in keep])


def graft(tree: DraftTree, node: int, tokens: Sequence[int], source: str, p: float = 1.0) -> DraftTree:
    """``tree`` with a chain of ``tokens`` below ``node``, each accepted with probability ``p``
    given its parent."""
    cum, parents = list(tree.cum), list(tree.parent_list)
    parent = node
    for _ in tokens:
        cum.append(cum[parent] * p)
        parents.append(parent)
        parent = len(parents) - 1
    raw = tree.raw_step or [1.0] * tree.size
    return assemble(tree.token_list + [int(t) for t in tokens], parents,
                    tree.sources + [source] * len(tokens), cum, raw + [p] * len(tokens))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


_ROOT_DEPTHS = _frozen(np.zeros(1, dtype=np.int64))
_ROOT_PARENTS = _frozen(np.full(1, -1, dtype=np.int64))
_ROOT_MASK = _frozen(np.ones((1, 1), dtype=np.bool_))


def root_only(root_token: int) -> DraftTree:
    """A tree with no drafts: a plain decoding step (most steps of most answers, so made
    without ``assemble``'s loops; the arrays every root-only tree has alike are shared, read-only)."""
    t = int(root_token)
    return DraftTree(tokens=np.array([t], dtype=np.int64), depths=_ROOT_DEPTHS, parents=_ROOT_PARENTS,
                     mask=_ROOT_MASK, sources=["root"], cum=[1.0], token_list=[t], parent_list=[-1],
                     children=[[]], raw_step=[1.0])
