"""Stress mode (``engine/bench/stress.py``): random draft trees against plain steps, bit for bit.

The real-model test is the CI-sized run of ``python -m engine.bench.stress``: two dev prompts whose
decoding crosses multiples of 128 positions, every variant (cold, history, warm, constrained).
Before keys.c, the same run found mismatching rows (attention chunks by cache slot)."""
from __future__ import annotations

import random

import numpy as np

from engine.decoding.drafting.tree import assemble, root_only
from engine.bench.stress import RandomTrees, Recorder, stress


class FixedInner:
    """A speculator whose tree is a chain of three drafts."""
    max_tree = 3
    calibration = None

    def __init__(self):
        self.observed = []

    def start(self, *a):
        return 0.0

    def propose(self):
        return assemble([5, 6, 7, 8], [-1, 0, 1, 2], ["root", "context", "context", "context"],
                        [1.0, 0.9, 0.8, 0.7], [1.0] * 4)

    def observe(self, tree, emitted, next_ids, verify_ms=None, past=0):
        self.observed.append(emitted)


def test_random_trees_keep_the_inner_tree_and_add_valid_decoys():
    trees = RandomTrees(FixedInner(), random.Random(3), cap=20, decoys=[5, 9, 11], vocab=100)
    sizes = set()
    for _ in range(40):
        t = trees.propose()
        sizes.add(t.size)
        assert 4 <= t.size <= 21
        # the inner chain 5 -> 6 -> 7 -> 8 is still a path, wherever its nodes went
        chain = [0]
        for tok in (6, 7, 8):
            chain.append(next(c for c in t.children[chain[-1]] if t.token_list[c] == tok))
        assert t.depths[chain[-1]] == 3
        for i in range(t.size):   # parents precede children; siblings hold distinct tokens
            assert t.parent_list[i] < i
            kids = [t.token_list[c] for c in t.children[i]]
            assert len(kids) == len(set(kids))
            assert np.array_equal(np.flatnonzero(t.mask[i]), np.array(t.path_to(i), np.int64))
    assert len(sizes) > 5, "sizes do not vary"


def test_recorder_paths_follow_the_tree_mask():
    class Model:
        def forward(self, tokens, positions, cache, mask=None):
            return np.zeros((len(tokens), 2), np.float32)

        def logits(self, hidden):
            return np.arange(len(hidden), dtype=np.float32)[:, None]

    class Cache:
        length = 10
    rec = Recorder(Model())
    tree = assemble([1, 2, 3, 4], [-1, 0, 0, 2], ["root"] + ["context"] * 3, [1.0] * 4, [1.0] * 4)
    mask = np.concatenate([np.ones((4, 10), bool), tree.mask], 1)
    rec.logits(rec.forward(tree.tokens, tree.depths + 10, Cache(), mask))
    rec.logits(rec.forward(root_only(9).tokens, np.array([10], np.int64), Cache()))
    rows = [(pos, start, path) for pos, start, path, _ in rec.rows()]
    assert rows == [(10, 10, [1]), (11, 10, [1, 2]), (11, 10, [1, 3]), (12, 10, [1, 3, 4]), (10, 10, [9])]


def test_random_trees_give_plain_steps_bits(engine, dev_cases):
    prompts = []
    for case in dev_cases[:2]:
        ids = engine.chat_ids([{"role": "user", "content": case["turns"][0]}])
        # start 20 tokens before a multiple of 128: trees of up to 33 rows straddle it
        keep = (len(ids) // 128) * 128 - 20 if len(ids) > 148 else len(ids)
        prompts.append((case["id"], ids[:16] + ids[len(ids) - (keep - 16):]))
    report = stress(engine, prompts, "hexa", max_new=40, seed=1)
    assert report.ok, report.token_mismatches + report.logit_mismatches
    assert report.rows > 100 and report.steps > 40
