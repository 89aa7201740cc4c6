import heapq
import itertools
import random

import pytest
import numpy as np

from engine.decoding.drafting.tree import (AdaptiveCutoff, Candidate, ConfidenceMap, TreeBuilder, choose_budget, graft,
                                           root_only, subtree)
from engine.runtime.profiling import CostCurve


def test_merge_dedups_prefixes_and_combines_sources():
    b = TreeBuilder(100)
    b.add(Candidate([1, 2, 3], [0.5, 0.5, 0.5], "context"))
    b.add(Candidate([1, 2, 4], [0.6, 0.5, 0.2], "context"))     # same source: max
    b.add(Candidate([1, 5], [0.5, 0.9], "history"))              # other source: noisy-or
    assert len(b) == 5                                           # 1,2,3,4,5
    cum = b.cumulative()
    one = b.kids[0][1]
    assert cum[one] == pytest.approx(1 - (1 - 0.6) * (1 - 0.5))
    assert b.source_of(one) == "context"
    five = b.kids[one][5]
    assert b.source_of(five) == "history"


def test_sibling_estimates_are_renormalized():
    b = TreeBuilder(0)
    b.add(Candidate([1], [0.9], "context"))
    b.add(Candidate([2], [0.9], "history"))
    cum = b.cumulative()
    assert cum[1] + cum[2] <= 0.99 + 1e-9


def brute_best(b: TreeBuilder, budget: int) -> float:
    """Max sum of cum over connected subtrees (containing the root) with <= budget nodes."""
    cum = b.cumulative()
    nodes = list(range(1, len(b.token)))
    best = 0.0
    for r in range(0, min(budget, len(nodes)) + 1):
        for sub in itertools.combinations(nodes, r):
            s = set(sub)
            if all(b.parent[i] == 0 or b.parent[i] in s for i in sub):
                best = max(best, sum(cum[i] for i in sub))
    return best


def random_builder(rng: random.Random, n_cands=4) -> TreeBuilder:
    b = TreeBuilder(0)
    for _ in range(n_cands):
        L = rng.randint(1, 4)
        b.add(Candidate([rng.randint(1, 3) for _ in range(L)], [rng.random() for _ in range(L)],
                        rng.choice(["context", "history", "calibrated"])))
    return b


def test_greedy_selection_is_optimal_and_connected():
    rng = random.Random(0)
    for _ in range(30):
        b = random_builder(rng)
        budget = rng.randint(1, 6)
        sel = b.select(budget)
        cum = b.cumulative()
        assert len(sel) <= budget
        seen = {0}
        for i in sel:                       # parents first
            assert b.parent[i] in seen
            seen.add(i)
        assert sum(cum[i] for i in sel) == pytest.approx(brute_best(b, budget))


def test_alpha_cutoff_and_max_depth():
    b = TreeBuilder(0)
    b.add(Candidate([1, 2, 3, 4], [0.5, 0.5, 0.5, 0.5], "context"))   # cum .5 .25 .125 .0625
    assert len(b.select(10, alpha=0.1)) == 3
    assert len(b.select(10, alpha=0.0, max_depth=2)) == 2


def test_flatten_mask_positions_parents():
    rng = random.Random(5)
    b = random_builder(rng, 6)
    t = b.build(8)
    m = t.size
    assert t.tokens.shape == (m,) and t.mask.shape == (m, m) and t.mask.dtype == np.bool_
    assert t.token_list[0] == 0 and t.parent_list[0] == -1 and t.sources[0] == "root"
    for i in range(m):
        anc = set(t.path_to(i))
        for j in range(m):
            assert bool(t.mask[i, j]) == (j in anc)
        if i:
            assert t.parent_list[i] < i
            assert int(t.depths[i]) == int(t.depths[t.parent_list[i]]) + 1
    assert np.array_equal(t.positions(10), t.depths + 10)
    assert t.expected_accepted() == pytest.approx(sum(t.cum[1:]))


def check_consistent(t):
    """Parents precede children; mask, depths, children and the python mirrors agree."""
    m = t.size
    assert t.tokens.tolist() == t.token_list and t.parents.tolist() == t.parent_list
    assert len(t.sources) == len(t.cum) == len(t.raw_step) == len(t.children) == m
    for i in range(m):
        anc = set(t.path_to(i))
        assert [bool(x) for x in t.mask[i]] == [j in anc for j in range(m)]
        assert t.children[i] == [c for c in range(m) if t.parent_list[c] == i]
        if i:
            assert t.parent_list[i] < i and int(t.depths[i]) == int(t.depths[t.parent_list[i]]) + 1


def test_subtree_cuts_branches_and_keeps_the_tree_consistent():
    rng = random.Random(11)
    t = random_builder(rng, 8).build(20)
    assert t.n > 6
    drop = {c for c in range(1, t.size) if rng.random() < 0.3}
    keep = [i for i in range(t.size) if not (set(t.path_to(i)) & drop)]   # a cut node takes its subtree
    s = subtree(t, keep)
    check_consistent(s)
    assert s.size == len(keep)
    for new, old in enumerate(keep):
        assert s.token_list[new] == t.token_list[old] and s.sources[new] == t.sources[old]
        assert s.cum[new] == t.cum[old] and int(s.depths[new]) == int(t.depths[old])
        assert [t.token_list[i] for i in t.path_to(old)] == [s.token_list[i] for i in s.path_to(new)]
    assert subtree(t, [0]).n == 0
    orphan = next(i for i in range(1, t.size) if t.parent_list[i] != 0)
    with pytest.raises(ValueError):
        subtree(t, [0, orphan])
    with pytest.raises(ValueError):
        subtree(t, [1])


def test_graft_appends_a_chain_below_a_node():
    rng = random.Random(3)
    t = random_builder(rng, 4).build(6)
    leaf = max(range(t.size), key=lambda i: int(t.depths[i]))
    g = graft(t, leaf, [41, 42, 43], "constraint")
    check_consistent(g)
    assert g.size == t.size + 3 and g.token_list[:t.size] == t.token_list
    assert [g.token_list[i] for i in g.path_to(g.size - 1)] == [t.token_list[i] for i in t.path_to(leaf)] + [41, 42, 43]
    assert g.sources[t.size:] == ["constraint"] * 3 and g.cum[-1] == t.cum[leaf]
    check_consistent(graft(root_only(5), 0, [6], "constraint"))


def test_root_only_tree():
    t = root_only(7)
    assert t.n == 0 and t.token_list == [7] and t.mask.tolist() == [[True]]


def test_choose_budget_follows_cost_curve():
    cums = [0.9, 0.8, 0.7, 0.3, 0.1, 0.05]
    cpu = lambda n: 59.0 + 10.8 * n
    flat = lambda n: 50.0 if n <= 32 else 100.0
    n_cpu = choose_budget(cums, cpu)
    assert n_cpu == max(range(len(cums) + 1), key=lambda n: (1 + sum(cums[:n])) / cpu(n + 1))
    assert 0 < n_cpu < len(cums)
    assert choose_budget(cums, flat) == len(cums)
    assert choose_budget([0.01], cpu) == 0
    b = TreeBuilder(0)
    b.add(Candidate([1, 2, 3, 4, 5, 6], [0.9, 0.9, 0.9, 0.3, 0.3, 0.3], "context"))
    assert len(b.select(6, cost_curve=cpu)) == choose_budget(sorted(b.cumulative()[1:], reverse=True), cpu)


def test_adaptive_cutoff_rules():
    a = AdaptiveCutoff(alpha0=0.01, tc=0.5)
    assert a.update(4, 4) == pytest.approx(0.005)
    assert a.update(4, 0) == pytest.approx(0.01)         # / 0.5**1
    assert a.update(4, 2) == pytest.approx(0.01 / 0.5 ** 0.5)
    assert a.update(0, 0) == pytest.approx(0.01 / 0.5 ** 0.5)   # nothing drafted: unchanged
    for _ in range(40):
        a.update(4, 0)
    assert a.alpha == a.hi


def test_sized_selection_estimates_only_what_it_reaches_and_picks_what_the_whole_order_gives():
    """``select`` with a cost curve stops once no bigger tree can beat its best ratio and
    estimates only the children of nodes it took; the reference here estimates every node
    first, takes the whole best-first order and lets ``choose_budget`` cut it."""
    rng = random.Random(17)
    sources = ["context", "history", "calibrated", "reuse"]
    stopped_early = 0
    for trial in range(400):
        conf = ConfidenceMap() if rng.random() < 0.7 else None
        for _ in range(rng.randrange(0, 200) if conf else 0):
            conf.update(rng.choice(sources), rng.random(), rng.random() < 0.5)
        cands = []
        for _ in range(rng.randint(1, 8)):
            L = rng.randint(1, 12)
            cands.append(Candidate([rng.randint(1, rng.choice([2, 4, 30])) for _ in range(L)],
                                   [rng.random() ** rng.choice([0.2, 1, 3]) for _ in range(L)], rng.choice(sources)))
        slope = rng.uniform(0.02, 1.0)
        points = [(n, 10.0 * (1 + slope * (n - 1) ** rng.uniform(0.7, 1.4))) for n in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)]
        curve = CostCurve(points) if rng.random() < 0.5 else CostCurve(points).__call__   # memoizing or not
        budget, alpha = rng.randint(1, 32), rng.choice([0.0, 0.0, 0.01, 0.2])
        depth = rng.choice([None, 3, 16])

        full = TreeBuilder(0, conf)
        for c in cands:
            full.add(c)
        cum = full.cumulative()
        heap, order = [(-cum[c], c) for c in full.kids[0].values()], []
        heapq.heapify(heap)
        while heap and len(order) < budget and -heap[0][0] >= alpha:
            _, i = heapq.heappop(heap)
            order.append(i)
            if depth is None or full.depth[i] < depth:
                for k in full.kids[i].values():
                    heapq.heappush(heap, (-cum[k], k))
        want = order[:choose_budget([cum[i] for i in order], curve)]

        lazy = TreeBuilder(0, conf)
        for c in cands:
            lazy.add(c)
        got = lazy.select(budget, alpha, depth, curve)
        assert got == want, trial
        tree = lazy.flatten(got)
        assert tree.cum == [1.0] + [cum[i] for i in got]            # the same floats, not close ones
        assert tree.raw_step == [1.0] + [full.raw_step[i] for i in got]
        stopped_early += sum(lazy._expanded) < sum(1 for k in full.kids if k)
    assert stopped_early >= 100, "the selection never stopped early: the test shows nothing"
