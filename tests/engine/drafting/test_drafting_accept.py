import numpy as np

from engine.decoding.drafting.accept import accepted_sources, greedy_accept, sample_accept
from engine.decoding.drafting.tree import Candidate, DraftTree, TreeBuilder

V = 5


def two_level_tree() -> DraftTree:
    # root 0 -> {1 -> {2, 3}, 2 -> {4}}  (a 2-level tree over a 5-token vocabulary)
    b = TreeBuilder(0)
    b.add(Candidate([1, 2], [0.6, 0.5], "context"))
    b.add(Candidate([1, 3], [0.6, 0.3], "history"))
    b.add(Candidate([2, 4], [0.3, 0.5], "calibrated"))
    return b.build(10)


def node_of(tree: DraftTree, tokens: list[int]) -> int:
    cur = 0
    for t in tokens:
        cur = next(c for c in tree.children[cur] if tree.token_list[c] == t)
    return cur


def test_greedy_accept_longest_path_and_bonus():
    t = two_level_tree()
    n1, n13 = node_of(t, [1]), node_of(t, [1, 3])
    nxt = [0] * t.size
    nxt[0], nxt[n1], nxt[n13] = 1, 3, 4
    path, bonus = greedy_accept(t, np.array(nxt))
    assert path == [0, n1, n13] and bonus == 4
    assert accepted_sources(t, path) == ("context", "history", "model")
    nxt[0] = 4                                   # root prediction matches no child
    assert greedy_accept(t, nxt) == ([0], 4)


def run_trials(tree: DraftTree, probs: np.ndarray, rule, trials: int, seed: int) -> dict:
    g = np.random.default_rng(seed)
    counts: dict = {}
    for _ in range(trials):
        path, bonus = rule(tree, probs, g)
        out = tuple(tree.token_list[i] for i in path[1:]) + (bonus,)
        key = out[:2]                               # the first two emitted tokens (or one)
        counts[key] = counts.get(key, 0) + 1
    return counts


def exact_distribution(tree: DraftTree, probs: np.ndarray) -> dict:
    """First token ~ p_root; if it is a tree child, the second ~ that node's distribution."""
    dist = {}
    for x in range(V):
        px = float(probs[0, x])
        child = next((c for c in tree.children[0] if tree.token_list[c] == x), None)
        if child is None:
            dist[(x,)] = dist.get((x,), 0.0) + px
        else:
            for y in range(V):
                dist[(x, y)] = px * float(probs[child, y])
    return dist


def chi_square(counts: dict, dist: dict, n: int) -> tuple[float, int]:
    stat, df = 0.0, -1
    for key, p in dist.items():
        if p <= 0:
            assert counts.get(key, 0) == 0, f"impossible outcome {key} sampled"
            continue
        e = p * n
        stat += (counts.get(key, 0) - e) ** 2 / e
        df += 1
    assert not set(counts) - set(dist), set(counts) - set(dist)
    return stat, df


def chi2_quantile_999(df: int) -> float:
    # Wilson-Hilferty approximation (df = 9 -> 28.0; exact 27.88)
    z = 3.0902
    return df * (1 - 2 / (9 * df) + z * (2 / (9 * df)) ** 0.5) ** 3


def make_probs(seed: int, size: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    p = g.random((size, V), dtype=np.float32) ** 2
    p[:, 4] = 0.0                                  # a zero-probability token (top-p style)
    return p / p.sum(-1, keepdims=True)


def test_sample_accept_is_lossless():
    tree = two_level_tree()
    probs = make_probs(0, tree.size)
    n = 20000
    counts = run_trials(tree, probs, sample_accept, n, seed=1)
    stat, df = chi_square(counts, exact_distribution(tree, probs), n)
    assert df == 9                       # 10 reachable outcomes (token 4 has p = 0)
    assert stat < chi2_quantile_999(df), (stat, df)
    tv = 0.5 * sum(abs(counts.get(k, 0) / n - p) for k, p in exact_distribution(tree, probs).items())
    assert tv < 0.02


def biased_accept(tree, probs, g):
    """A wrong rule (accept a child whenever it is the argmax; else sample p): must be caught."""
    path, cur = [0], 0
    while True:
        p = probs[cur]
        am = int(p.argmax())
        nxt = next((c for c in tree.children[cur] if tree.token_list[c] == am), None)
        if nxt is None:
            return path, int(g.choice(V, p=p / p.sum(dtype=np.float64)))
        path.append(nxt)
        cur = nxt


def test_statistical_test_has_power():
    tree = two_level_tree()
    probs = make_probs(0, tree.size)
    probs[0] = np.array([0.1, 0.45, 0.45, 0.0, 0.0])   # root argmax is a child -> rule is biased
    n = 20000
    counts = run_trials(tree, probs, biased_accept, n, seed=2)
    stat, df = chi_square(counts, exact_distribution(tree, probs), n)
    assert stat > 100


def test_sample_accept_point_mass_behaves_like_greedy():
    tree = two_level_tree()
    n1, n12 = node_of(tree, [1]), node_of(tree, [1, 2])
    probs = np.zeros((tree.size, V), dtype=np.float32)
    probs[:, 3] = 1.0
    probs[0] = np.eye(V, dtype=np.float32)[1]
    probs[n1] = np.eye(V, dtype=np.float32)[2]
    path, bonus = sample_accept(tree, probs, np.random.default_rng(0))
    assert path == [0, n1, n12] and bonus == 3
