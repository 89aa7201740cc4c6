"""Method specs: how each method's drafter is configured and its trees sized."""
from __future__ import annotations

import random

from engine.speculative import METHOD_SPECS, Speculator


def steep_cost(m: int) -> float:
    """A CPU-like curve: every fed token costs as much as the fixed part."""
    return 10.0 * (1 + m)


def repetitive_prompt(seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    phrases = [[rng.randrange(1000, 9000) for _ in range(rng.randint(4, 9))] for _ in range(12)]
    out: list[int] = []
    while len(out) < 600:
        out += rng.choice(phrases)
    return out


def tree_sizes(method: str) -> list[int]:
    ids = repetitive_prompt()
    sp = Speculator(METHOD_SPECS[method], [], steep_cost, max_tree=32, max_depth=16)
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
    assert METHOD_SPECS["hexa-fill"].fill == 32


def test_fill_respects_a_static_backends_graph_cap():
    ids = repetitive_prompt(1)
    sp = Speculator(METHOD_SPECS["hexa-fill"], [], steep_cost, max_tree=7, max_depth=7)
    sp.start(ids[:-1], ids[-1], None)
    assert 0 < sp.propose().n <= 7
