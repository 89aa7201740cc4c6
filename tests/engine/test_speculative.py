"""Method specs: how each method's drafter is configured and its trees sized."""
from __future__ import annotations

import random

from engine.methods import METHOD_SPECS
from engine.runtime.profiling import CostCurve, CostModel, OnlineCost
from engine.decoding.speculative import DraftingSpeculator, PlainDecoding


def steep_cost() -> OnlineCost:
    """A CPU-like curve: every fed token costs as much as the fixed part (10 * (1 + m) ms)."""
    return OnlineCost(CostModel({0: CostCurve([(1, 20.0), (2, 30.0)])}))


def repetitive_prompt(seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    phrases = [[rng.randrange(1000, 9000) for _ in range(rng.randint(4, 9))] for _ in range(12)]
    out: list[int] = []
    while len(out) < 600:
        out += rng.choice(phrases)
    return out


def tree_sizes(method: str) -> list[int]:
    ids = repetitive_prompt()
    sp = DraftingSpeculator(METHOD_SPECS[method], [], steep_cost(), max_tree=32, max_depth=16)
    sp.start(ids[:-1], ids[-1], None)
    sizes = []
    for _ in range(10):
        tree = sp.propose()
        sizes.append(tree.n)
        # the model agrees with the first branch, then goes on with a token seen in the prompt
        node, emitted = 0, []
        while tree.children[node]:
            node = tree.children[node][0]
            emitted.append(tree.token_list[node])
        sp.observe(tree, emitted + [ids[len(sizes) * 7]], tree.tokens)
    return sizes


def test_fill_fills_the_static_budget_where_the_cost_curve_keeps_trees_small():
    fill, sized = tree_sizes("hexa-fill"), tree_sizes("hexa")
    assert max(fill) == 32 and min(fill) > 8, fill
    assert max(sized) <= 8, sized


def test_fill_respects_a_static_backends_graph_cap():
    ids = repetitive_prompt(1)
    sp = DraftingSpeculator(METHOD_SPECS["hexa-fill"], [], steep_cost(), max_tree=7, max_depth=7)
    sp.start(ids[:-1], ids[-1], None)
    assert 0 < sp.propose().n <= 7


def test_observed_verification_times_correct_the_cost_curve():
    ids = repetitive_prompt(2)
    cost = steep_cost()
    sp = DraftingSpeculator(METHOD_SPECS["hexa"], [], cost, max_tree=32, max_depth=16)
    sp.start(ids[:-1], ids[-1], None)
    tree = sp.propose()
    sp.observe(tree, [ids[5]], tree.tokens, verify_ms=4 * cost(tree.size), past=len(ids))
    assert cost.ratio[cost._bucket(tree.size)] > 1.5          # slower than profiled: noted


def test_plain_decoding_feeds_the_pending_token_alone():
    sp = PlainDecoding()
    assert sp.max_tree == 0 and sp.calibration is None
    assert sp.start([1, 2, 3], 7, None) == 0.0
    tree = sp.propose()
    assert tree.token_list == [7] and tree.n == 0
    sp.observe(tree, [9], tree.tokens)
    assert sp.propose().token_list == [9]
