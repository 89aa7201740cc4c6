import pytest
import numpy as np

from engine.decoding.drafting.calibration import CalibratedTree, CalibrationConfig
from engine.runtime.reference import softmax


def view(rows: list[list[tuple[int, float]]]):
    ids = np.array([[t for t, _ in r] for r in rows], dtype=np.int64)
    probs = np.array([[p for _, p in r] for r in rows], dtype=np.float32)
    return ids, probs


# The context says "10 11 12 10 13", but the model would write 20 after 11 ("Clinton arrived"
# vs "Clinton's security detail has arrived"): calibration must follow the model.
PROMPT = [10, 11, 12, 10, 13]
ROWS = [
    [(11, 0.9), (12, 0.05)],   # after 10 (pos 0)
    [(20, 0.7), (12, 0.3)],    # after 11
    [(10, 0.9), (11, 0.05)],   # after 12
    [(13, 0.6), (11, 0.3)],    # after 10 (pos 3)
    [(30, 0.5), (31, 0.4)],    # after 13
]


def test_sample_averages_over_occurrences_and_search_follows_model():
    ids, probs = view(ROWS)
    ct = CalibratedTree.build(PROMPT, ids, probs, CalibrationConfig(k=2, p_threshold=0.1, order=1,
                                                                   min_cum=0.01, max_depth=4))
    paths = ct.lookup([10])
    best_tokens, best_probs = paths[0]
    # P(11 | 10) = (0.9 + 0.3) / 2 occurrences; then the model's own 20 (not the context's 12)
    assert best_tokens[:2] == [11, 20]
    assert best_probs[:2] == pytest.approx([0.6, 0.7])
    # 20 never occurs in the context: the search cannot expand past it
    assert best_tokens == [11, 20]
    # the context continuation is still there, expanded through the occurrence of 12 -> 10 -> ...
    assert any(t[:3] == [11, 12, 10] for t, _ in paths)
    assert ct.stats.prompt_tokens == 5 and ct.stats.nodes > 0 and ct.stats.nbytes > 0


def test_threshold_depth_and_node_caps():
    ids, probs = view(ROWS)
    strict = CalibratedTree.build(PROMPT, ids, probs, CalibrationConfig(k=2, p_threshold=0.65, order=1))
    # only successors with averaged p >= 0.65 survive: 11 -> 20 (0.7), 12 -> 10 (0.9)
    assert strict.lookup([11]) == [([20], [pytest.approx(0.7)])]
    assert strict.lookup([10]) == []
    shallow = CalibratedTree.build(PROMPT, ids, probs, CalibrationConfig(k=2, order=1, max_depth=2))
    assert max(len(t) for t, _ in shallow.lookup([10])) <= 2
    capped = CalibratedTree.build(PROMPT, ids, probs, CalibrationConfig(k=2, order=1, max_nodes=3))
    ranges = [capped.tree(key) for key in capped.keys()]
    assert ranges and all(e - s <= 3 for s, e in ranges)


def test_order2_keys_and_backoff():
    ids, probs = view(ROWS)
    ct = CalibratedTree.build(PROMPT, ids, probs, CalibrationConfig(k=2, order=2, p_threshold=0.1))
    # (12, 10) occurred once (pos 3): its own prediction 13 (0.6) beats the order-1 average
    assert ct.lookup([12, 10])[0][0][0] == 13
    assert ct.lookup([12, 10])[0][1][0] == pytest.approx(0.6)
    # unseen bigram backs off to the last token's key
    assert ct.lookup([99, 10])[0][0][0] == 11
    assert ct.lookup([99]) == []


def test_path_probabilities_are_products_and_sorted():
    g = np.random.default_rng(0)
    T, k = 200, 4
    prompt = [int(x) for x in g.integers(0, 30, T)]
    ids = g.integers(0, 30, (T, k))
    probs = softmax(g.standard_normal((T, k), dtype=np.float32) * 2)
    ct = CalibratedTree.build(prompt, ids, probs, CalibrationConfig(k=4, p_threshold=0.1, min_cum=0.02))
    for key in list(ct.roots)[:20]:
        paths = ct.lookup(list(key), max_paths=50)
        cums = []
        for toks, ps in paths:
            assert len(toks) == len(ps) and all(0 < p <= 1.0 + 1e-6 for p in ps)
            c = 1.0
            for p in ps:
                c *= p
            assert c >= 0.02 - 1e-6
            cums.append(c)
        assert cums == sorted(cums, reverse=True)


def test_shape_mismatch_is_rejected():
    with pytest.raises(ValueError):
        CalibratedTree.build([1, 2, 3], np.zeros((2, 4), dtype=np.int64), np.zeros((2, 4), dtype=np.float32))


def test_trees_are_searched_on_first_use_and_do_not_depend_on_the_order():
    """A key's tree is searched when it is first looked up (a prompt has ~2 keys a token, a draft
    reads one or two); the paths are the same whichever keys were searched before."""
    ids, probs = view(ROWS)
    cfg = CalibrationConfig(k=2, order=2, p_threshold=0.1, min_cum=0.01)
    a, b = CalibratedTree.build(PROMPT, ids, probs, cfg), CalibratedTree.build(PROMPT, ids, probs, cfg)
    assert a.stats.nodes == 0 and a.stats.keys == len(a.keys()) > 0    # nothing searched yet
    contexts = [[k] for k in (10, 11, 12, 13)] + [[10, 11], [12, 10], [11, 12]]
    first = [a.lookup(c) for c in contexts]
    for key in reversed(b.keys()):
        b.tree(key)
    assert [b.lookup(c) for c in contexts] == first
    assert a.lookup([99]) == [] and a.tree((99,)) is None


def sample_by_loop(prompt, ids, probs, cfg):
    """The Sample step position by position, as first written: P(t | key) summed over the key's
    occurrences in position order, averaged, kept >= the threshold, best first."""
    mass, occ = {}, {}
    rows_i, rows_p = ids[:, :cfg.k].tolist(), probs[:, :cfg.k].astype(np.float32).tolist()
    for i in range(len(prompt)):
        for o in range(1, cfg.order + 1):
            if i - o + 1 < 0:
                break
            key = tuple(prompt[i - o + 1:i + 1])
            occ[key] = occ.get(key, 0) + 1
            d = mass.setdefault(key, {})
            for t, p in zip(rows_i[i], rows_p[i]):
                if p >= cfg.p_threshold:
                    d[t] = d.get(t, 0.0) + p
    succ = {}
    for key, d in mass.items():
        lst = sorted(((p / occ[key], t) for t, p in d.items() if p / occ[key] >= cfg.p_threshold), reverse=True)
        if lst:
            succ[key] = lst
    return succ


@pytest.mark.parametrize("seed", range(12))
def test_every_keys_successors_equal_the_position_by_position_sums(seed):
    """The vectorised Sample step gives every key exactly (bit for bit) the loop's averaged
    successors and order, ties included, for keys of 1-3 tokens."""
    g = np.random.default_rng(seed)
    T, V, k = int(g.integers(1, 400)), int(g.integers(2, 120)), int(g.integers(1, 6))
    prompt = g.integers(0, V, T).tolist()
    ids = g.integers(0, V + 10, (T, k))
    probs = softmax(g.standard_normal((T, k), dtype=np.float32) * 2)
    if seed % 2:
        probs = (np.round(probs * 8) / 8).astype(np.float32)        # many equal probabilities
    cfg = CalibrationConfig(k=int(g.integers(1, 6)), p_threshold=float(g.choice([0.03, 0.1, 0.25])),
                            order=int(g.integers(1, 4)))
    ct = CalibratedTree.build(prompt, ids, probs, cfg)
    want = sample_by_loop(prompt, ids, probs, cfg)
    assert sorted(ct.keys()) == sorted(want) and ct.stats.keys == len(want)
    for key, successors in want.items():
        assert ct._successors(key) == successors, key
    assert ct._successors((V + 3,)) is None and ct._successors(tuple(range(cfg.order + 1))) is None
