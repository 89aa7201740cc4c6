import random

import pytest
import numpy as np

from engine.decoding.drafting import Drafter, build_history, greedy_accept
from engine.bench.drafting import OracleModel, simulate, synthetic_request


@pytest.fixture(scope="module")
def request_data():
    return synthetic_request(random.Random(7), prompt_len=300, out_len=120, vocab=5000)


@pytest.mark.parametrize("kw", [
    dict(mode="linear", use_calibration=False, use_reuse=False),
    dict(use_calibration=False, use_reuse=False),
    dict(),
    dict(cost_curve=lambda n: 59.0 + 10.8 * n),
])
def test_simulated_generation_is_lossless_and_speeds_up(request_data, kw):
    prompt, target, history = request_data
    r = simulate(prompt, target, history, budget=16, max_depth=8, **kw)
    assert r.lossless
    assert r.mean_accepted > 1.8, r.mean_accepted      # copy-heavy output: drafts must land
    assert set(r.by_source) <= {"context", "history", "calibrated", "reuse"}


def step(d: Drafter, model: OracleModel, gen: list[int], budget=16, max_depth=8):
    tree = d.propose(budget, max_depth)
    paths = [[tree.token_list[j] for j in tree.path_to(i)[1:]] for i in range(tree.size)]
    next_ids = [model.predict(gen, p) for p in paths]
    path, bonus = greedy_accept(tree, np.array(next_ids))
    emitted = [tree.token_list[i] for i in path[1:]] + [bonus]
    assert d.observe(emitted, tree, np.array(next_ids)) == path
    gen += emitted
    return tree, path


def test_tree_shape_budget_and_root(request_data):
    prompt, target, history = request_data
    d = Drafter(prompt, history)
    d.observe([target[0]])
    tree = d.propose(budget=10, max_depth=3)
    assert tree.token_list[0] == target[0]
    assert tree.n <= 10 and tree.max_depth <= 3
    assert d.propose(budget=0).n == 0
    lin = Drafter(prompt, history, mode="linear", linear_len=5)
    lin.observe([target[0]])
    t = lin.propose(budget=32)
    assert t.n <= 5 and all(len(c) <= 1 for c in t.children)
    empty = np.zeros((len(prompt), 4), dtype=np.int64), np.zeros((len(prompt), 4), dtype=np.float32)
    assert lin.set_calibration(*empty) is None


def test_propose_needs_a_committed_token():
    with pytest.raises(ValueError):
        Drafter([], None).propose(4)


def test_history_source_drafts_for_unrelated_prompt():
    rng = random.Random(1)
    prompt = [rng.randrange(1000) for _ in range(50)]
    target = [rng.randrange(1000, 2000) for _ in range(60)]
    hist = build_history([target[:40], [5, 6, 7]])           # an earlier, similar response
    model = OracleModel(prompt, target)
    d = Drafter(prompt, hist, use_calibration=False)
    gen = [target[0]]
    d.observe(gen)
    sources = []
    while len(gen) < 40:
        tree, path = step(d, model, gen)
        sources += [tree.sources[i] for i in path[1:]]
    assert gen[:40] == target[:40]
    assert sources.count("history") >= 20


def test_reuse_recovers_after_missing_token():
    A, B, C, D, E, F, G, H, X = range(100, 109)
    prompt = [1, 2, A, B, C, D, E, F, G, H, 3, 4, A]
    target = [B, X, C, D, E, F, G, H, 5]        # the model inserts X, then continues the context
    model = OracleModel(prompt, target)
    d = Drafter(prompt, None, use_calibration=False, use_history=False)
    gen = [target[0]]
    d.observe(gen)
    tree, path = step(d, model, gen)            # drafts C D E ...; C rejected, bonus X
    assert gen == [B, X] and len(d.reuse) == 1
    tree, path = step(d, model, gen)            # nothing in context follows X: reuse offers C D E...
    assert [tree.sources[i] for i in path[1:]][:5] == ["reuse"] * 5
    assert gen[:8] == target[:8]


def test_calibrated_source_follows_model_phrasing():
    # context: "7 8 9" three times; the model would rather write "7 50 51" (seen in its own
    # predictions at every 7), so the calibrated tree drafts 50 51 after 7.
    prompt = [7, 8, 9, 1, 7, 8, 9, 2, 7, 8, 9, 3, 50, 51, 4]
    T = len(prompt)
    ids = np.zeros((T, 4), dtype=np.int64)
    probs = np.tile(np.array([[0.7, 0.1, 0.1, 0.1]], dtype=np.float32), (T, 1))
    for i, t in enumerate(prompt):
        ids[i] = [{7: 50, 50: 51}.get(t, prompt[min(i + 1, T - 1)]), 900, 901, 902]
    target = [7, 50, 51, 4, 6]
    model = OracleModel(prompt, target)
    d = Drafter(prompt, None, use_history=False, use_reuse=False)
    stats = d.set_calibration(ids, probs)
    assert stats.prompt_tokens == T and stats.keys > 0   # trees are searched when drafting reads them
    gen = [target[0]]
    d.observe(gen)
    tree, path = step(d, model, gen)
    assert [tree.token_list[i] for i in path[1:]][:2] == [50, 51]
    assert "calibrated" in [tree.sources[i] for i in path[1:]]


def test_per_source_scale_tracks_acceptance():
    rng = random.Random(2)
    prompt = [rng.randrange(1000) for _ in range(30)]
    target = [rng.randrange(1000, 2000) for _ in range(80)]
    # a misleading history: every target token is followed by junk
    misleading = []
    for t in target:
        misleading += [t, rng.randrange(3000, 4000)]
    d = Drafter(prompt, [misleading], use_calibration=False, use_reuse=False, use_context=False,
                min_match_history=1)
    model = OracleModel(prompt, target)
    gen = [target[0]]
    d.observe(gen)
    while len(gen) < 60:
        step(d, model, gen)
    tested = d.stats["history"][2]
    assert tested >= 10
    assert d.scale("history") < 0.8
    assert d.scale("context") == pytest.approx(1.0)     # untested source keeps its prior


def test_alpha_adapts_to_acceptance(request_data):
    """EdgeLLM's fallback threshold: a fully accepted tree lowers it (draft deeper), a rejected
    one raises it (draft less)."""
    prompt, target, history = request_data
    d = Drafter(prompt, history, alpha0=0.01, tc=0.5)
    model = OracleModel(prompt, target)
    gen = [target[0]]
    d.observe(gen)
    moves = set()
    for _ in range(10):
        before = d.cutoff.alpha
        tree, path = step(d, model, gen)
        rejected = bool(tree.children[path[-1]])    # drafts below the last accepted node were not
        if tree.n and rejected:
            assert d.cutoff.alpha > before or d.cutoff.alpha == d.cutoff.hi
            moves.add("up")
        elif tree.n:
            assert d.cutoff.alpha < before or d.cutoff.alpha == d.cutoff.lo
            moves.add("down")
    assert moves == {"up", "down"}                  # both rules were exercised
