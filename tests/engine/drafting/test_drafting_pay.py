"""The checks that skip drafting when no tree can pay give the trees building them gives."""
import random

import pytest

import engine.decoding.drafting.drafter as drafter_module
from engine.bench.drafting import simulate, synthetic_request
from engine.decoding.drafting.tree import (Candidate, ConfidenceMap, TreeBuilder, best_first_step,
                                           first_step_ceiling, pay_threshold, pays)
from engine.runtime.profiling import CostCurve

CURVES = {
    "steep CPU": CostCurve([(1, 10.0), (2, 13.0), (4, 18.0), (8, 30.0), (16, 55.0), (32, 100.0)]),
    "flatter": CostCurve([(1, 10.0), (2, 10.8), (4, 12.0), (8, 15.0), (16, 24.0), (32, 45.0)]),
}


def trees(prompt, target, history, curve, seed):
    """Every proposed tree of one simulated request, as (tokens, parents)."""
    return simulate(prompt, target, history, budget=16, max_depth=8, seed=seed,
                    cost_curve=curve, confidence=ConfidenceMap()).trees


@pytest.mark.parametrize("name", sorted(CURVES))
@pytest.mark.parametrize("seed", [3, 11])
def test_skipping_unpaying_steps_keeps_every_tree(name, seed, monkeypatch):
    rng = random.Random(seed)
    prompt, copied, history = synthetic_request(rng, prompt_len=400, out_len=300, vocab=400, edit_rate=0.3)
    target = []        # copied spans between runs of tokens drawn anew: weak, short matches
    while copied:
        target += copied[:rng.randint(5, 25)] + [rng.randrange(400) for _ in range(rng.randint(5, 25))]
        copied = copied[25:]
    curve = CURVES[name]
    checked = trees(prompt, target, history, CostCurve(curve.points), seed)
    skipped = []
    monkeypatch.setattr(drafter_module, "pays", lambda step, floor: skipped.append(not pays(step, floor)) or True)
    built = trees(prompt, target, history, CostCurve(curve.points), seed)
    assert checked == built
    assert sum(skipped) >= 10, "the checks never skipped a step: the test shows nothing"
    assert sum(len(t) > 1 for t, _ in built) >= 10, "no trees were drafted: the test shows nothing"


def test_the_ceiling_bounds_the_best_first_step_and_the_threshold_the_trie():
    rng = random.Random(5)
    sources = ["context", "history", "calibrated", "reuse"]
    for trial in range(300):
        conf = ConfidenceMap()
        for _ in range(rng.randrange(0, 200)):
            conf.update(rng.choice(sources), rng.random(), rng.random() < 0.4)
        cands = [Candidate([rng.randrange(6) for _ in range(rng.randint(1, 5))],
                           [rng.random() for _ in range(5)], rng.choice(sources))
                 for _ in range(rng.randint(1, 6))]
        caps = {}
        for c in cands:
            caps[c.source] = max(caps.get(c.source, 0.0), c.probs[0] + rng.random() * 0.1)
        best = best_first_step(cands, conf)
        assert first_step_ceiling(caps, conf) >= best - 1e-12
        slope = rng.uniform(0.05, 1.5)
        curve = CostCurve([(n, 10.0 * (1 + slope * (n - 1) ** rng.uniform(0.8, 1.3))) for n in range(1, 34)])
        b = TreeBuilder(0, conf)
        for c in cands:
            b.add(c)
        chosen = b.select(32, 0.0, None, curve)
        if not pays(best, pay_threshold(curve, 32)):
            assert chosen == [], trial
