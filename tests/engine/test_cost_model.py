"""The draft-tree cost model: profiled curves by tokens fed and context length, and its use."""
import time
from types import SimpleNamespace

import numpy as np
import pytest

from engine.decoding.drafting.tree import Candidate, ConfidenceMap, TreeBuilder, choose_budget
from engine.runtime.profiling import CostCurve, CostModel, profile_cost_curves, profile_cost_model


def test_cost_curve_interpolates_and_extrapolates():
    c = CostCurve([(1, 50.0), (4, 80.0), (8, 100.0)])
    assert c(1) == 50 and c(4) == 80
    assert c(2) == pytest.approx(60.0)
    assert c(16) == pytest.approx(140.0)          # last segment extended


def test_cost_model_interpolates_in_context_length():
    m = CostModel({128: CostCurve([(1, 50.0), (8, 70.0)]), 1024: CostCurve([(1, 60.0), (8, 100.0)])})
    assert m(1) == 50.0                            # plain call: shortest context
    assert m.at(128)(8) == pytest.approx(70.0)
    mid = m.at(576)
    assert mid(1) == pytest.approx(55.0) and mid(8) == pytest.approx(85.0)
    assert m.at(2048)(8) > 100.0                   # extrapolated: longer context costs more
    assert m.at(600) is m.at(630)                  # memoised per 64-token bucket


def test_plain_step_when_drafts_are_weak_and_big_tree_when_strong():
    steep = CostModel({128: CostCurve([(1, 50.0), (2, 95.0), (32, 400.0)])})
    cheap = CostModel({128: CostCurve([(1, 50.0), (2, 55.0), (8, 60.0), (32, 120.0)])})
    weak = [0.2, 0.1, 0.05]
    assert choose_budget(weak, steep.at(0)) == 0
    strong = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65]
    assert choose_budget(strong, cheap.at(0)) == len(strong)
    assert 0 < choose_budget([0.9, 0.5, 0.2, 0.1], steep.at(0)) < 4   # a steep curve trims the tail


def test_profiled_model_is_monotone_and_positive(engine):
    m = profile_cost_model(engine.model, pasts=(32, 256), repeats=1)
    for past in (32, 256):
        pts = m.curves[past].as_dict()
        assert sorted(pts) == [1, 2, 4, 8, 16, 32]
        vals = [pts[n] for n in sorted(pts)]
        assert all(v > 0 for v in vals) and vals == sorted(vals)


class _BusyAtFirst:
    """Fault injection: a backend whose passes cost 2 ms + 0.25 ms a token fed, 3x that during its
    first 6 passes (another process starting on the same cores)."""

    def __init__(self):
        self.passes = 0

    def new_cache(self, capacity):
        return SimpleNamespace(k=np.zeros((1, capacity, 2), np.float32), v=np.zeros((1, capacity, 2), np.float32), length=0)

    def forward(self, tokens, positions, cache, mask=None):
        self.passes += 1
        time.sleep((2.0 + 0.25 * len(tokens)) * (3 if self.passes <= 6 else 1) / 1000)
        return tokens

    def logits(self, hidden):
        return hidden


def test_a_busy_moment_while_profiling_does_not_bend_the_curve():
    # timed one size after another, the busy passes were all of the 1- and 2-token sizes: a plain
    # step looked 3x dearer, and every bigger tree cheaper, than it was
    curves = profile_cost_curves(_BusyAtFirst(), (64, 512))
    for curve in curves.values():
        assert curve(32) / curve(1) == pytest.approx((2.0 + 0.25 * 32) / (2.0 + 0.25), rel=0.2)


def test_confidence_map_learns_per_source_and_bin():
    cm = ConfidenceMap(bins=10, prior=4.0)
    assert cm("context", 0.55) == 0.55             # nothing observed: identity
    for _ in range(40):
        cm.update("context", 0.55, False)          # 0.55-estimates of context are never accepted
        cm.update("calibrated", 0.95, True)
    assert cm("context", 0.55) < 0.1
    assert cm("context", 0.15) == pytest.approx(0.15)   # other bins untouched
    assert cm("calibrated", 0.95) > 0.95
    assert cm("history", 0.55) == 0.55


def test_tree_uses_the_confidence_map_and_keeps_raw_estimates():
    cm = ConfidenceMap(bins=10, prior=1.0)
    for _ in range(50):
        cm.update("context", 0.6, False)
    b = TreeBuilder(0, cm)
    b.add(Candidate([1, 2], [0.6, 0.6], "context"))
    b.add(Candidate([3], [0.3], "calibrated"))
    t = b.build(8)
    by_tok = {t.token_list[i]: i for i in range(1, t.size)}
    assert t.raw_step[by_tok[1]] == pytest.approx(0.6)
    assert t.cum[by_tok[1]] < 0.05                  # mapped down
    assert t.cum[by_tok[3]] == pytest.approx(0.3)   # calibrated source unmapped


def test_online_cost_follows_observed_times_and_relaxes():
    from engine.runtime.profiling import OnlineCost

    prof = CostModel({128: CostCurve([(1, 50.0), (2, 60.0), (8, 70.0), (32, 120.0)])})
    oc = OnlineCost(prof, alpha=0.5, relax=0.1)
    assert oc.at(128)(8) == pytest.approx(70.0)
    for _ in range(10):
        oc.observe(8, 128, 140.0)               # 8-token passes really cost twice the profile
    assert oc.at(128)(8) == pytest.approx(140.0, rel=0.01)
    assert oc.at(128)(1) == pytest.approx(50.0)
    assert choose_budget([0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1], oc.at(128)) < 7
    for _ in range(oc.STALE):
        oc.observe(1, 128, 50.0)                # only plain steps now: bucket 8 is kept a while
    assert oc.at(128)(8) == pytest.approx(140.0, rel=0.01)
    for _ in range(40):
        oc.observe(1, 128, 50.0)                # then drifts back toward the profile's shape
    assert oc.at(128)(8) < 80.0
    oc.observe(1, 128, 1e9)                     # absurd samples are clipped
    assert oc.ratio[0] <= 4.0


def test_online_cost_learns_a_rare_size_in_full():
    """Five plain steps for each 1-draft one (SmolLM2's qa): the 2-token pass's cost is learnt as
    observed, not pulled halfway back to the plain step's correction after every plain step."""
    from engine.runtime.profiling import OnlineCost

    oc = OnlineCost(CostModel({128: CostCurve([(1, 50.0), (2, 60.0), (8, 70.0)])}))
    for _ in range(60):
        oc.observe(2, 128, 75.0)
        for _ in range(5):
            oc.observe(1, 128, 50.0)
    assert oc.at(128)(2) == pytest.approx(75.0, rel=0.03)
    for _ in range(60):                         # the machine gets 20% slower: every size follows
        oc.observe(2, 128, 90.0)
        for _ in range(5):
            oc.observe(1, 128, 60.0)
    assert oc.at(128)(1) == pytest.approx(60.0, rel=0.03)
    assert oc.at(128)(2) == pytest.approx(90.0, rel=0.03)


def test_what_is_learnt_does_not_depend_on_when_it_is_read():
    """Observations wait to be learnt until a cost is read: read after every pass or once at
    the end, the corrections come out the same; a curve read leaves at most 7 waiting."""
    import random

    from engine.runtime.profiling import OnlineCost

    def model():
        return CostModel({128: CostCurve([(1, 10.0), (2, 13.0), (8, 30.0)]),
                          1024: CostCurve([(1, 14.0), (2, 18.0), (8, 40.0)])})
    eager, lazy = OnlineCost(model()), OnlineCost(model())
    rng = random.Random(2)
    for i in range(500):
        fed, past = rng.choice([1, 1, 1, 2, 3, 8]), rng.randrange(100, 1500)
        ms, over = model().at(past)(fed) * rng.uniform(0.8, 1.6), rng.uniform(0.1, 0.6)
        for oc in (eager, lazy):
            oc.observe(fed, past, ms)
            oc.observe_overhead(over, drafted=fed > 1)
        eager.ratio
        if i % 50 == 0:
            curve = lazy.at(past)
            assert len(lazy._todo) < 8
            assert curve(1) == lazy.at(past)(1)
    assert lazy.ratio == eager.ratio
    assert lazy.overhead_ms == eager.overhead_ms and lazy.drafted_overhead_ms == eager.drafted_overhead_ms


def test_a_steps_overhead_makes_trees_worth_more():
    """A step's wall time outside its verification is paid once a step: with it, a draft
    that would not pay for its verification alone pays by saving steps."""
    from engine.runtime.profiling import OnlineCost

    oc = OnlineCost(CostModel({128: CostCurve([(1, 10.0), (2, 13.0), (8, 30.0)])}))
    assert choose_budget([0.25], oc.at(128)) == 0           # 1.25 tokens / 13 ms < 1 / 10 ms
    for _ in range(200):
        oc.observe_overhead(5.0)
        oc.observe_overhead(5.0, drafted=True)
    assert oc.overhead_ms == pytest.approx(5.0, rel=0.01)
    assert oc.at(128)(1) == pytest.approx(15.0, rel=0.01)
    assert choose_budget([0.25], oc.at(128)) == 1           # 1.25 / 18 ms > 1 / 15 ms
    oc.observe_overhead(1e6)                                # a paused consumer: capped
    assert oc.overhead_ms < 6.0


def test_what_drafting_adds_to_a_step_is_charged_to_trees():
    """Steps that verify drafts spend longer outside the verification (building the tree,
    learning from it): a draft must pay for that too."""
    from engine.runtime.profiling import OnlineCost

    oc = OnlineCost(CostModel({128: CostCurve([(1, 10.0), (2, 13.0), (8, 30.0)])}))
    for _ in range(200):
        oc.observe_overhead(0.2)
        oc.observe_overhead(0.2, drafted=True)
    assert choose_budget([0.35], oc.at(128)) == 1           # 1.35 / 13.2 ms > 1 / 10.2 ms
    for _ in range(200):
        oc.observe_overhead(1.5, drafted=True)
    assert oc.drafted_overhead_ms == pytest.approx(1.5, rel=0.01) and oc.overhead_ms == pytest.approx(0.2, rel=0.01)
    assert oc.at(128)(2) == pytest.approx(14.5, rel=0.01) and oc.at(128)(1) == pytest.approx(10.2, rel=0.01)
    assert choose_budget([0.35], oc.at(128)) == 0           # 1.35 / 14.5 ms < 1 / 10.2 ms


def test_profile_is_saved_and_reused(real_engine, tmp_path, monkeypatch):
    from engine.runtime import profiling

    path = tmp_path / "profiles" / "p.json"
    first = profiling.load_or_profile(real_engine.model, path, pasts=(64,), repeats=1)
    assert path.exists()

    def no_profiling(*a, **k):
        raise AssertionError("profiled again although a saved profile exists")
    monkeypatch.setattr(profiling, "profile_cost_model", no_profiling)
    again = profiling.load_or_profile(real_engine.model, path)
    assert again.as_dict() == first.as_dict()

    path.write_text("{not json")                       # damaged: profiled again, not trusted
    monkeypatch.undo()
    fresh = profiling.load_or_profile(real_engine.model, path, pasts=(64,), repeats=1)
    assert set(fresh.as_dict()) == {64} and path.read_text().startswith("{")
