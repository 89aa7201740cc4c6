"""The penalties' and truncations' math against hand-computed examples, and the tree-wide
application (one batched pass over a draft tree) against a naive per-path reference."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from engine.decoding.drafting.tree import Candidate, TreeBuilder
from engine.decoding.penalties import Penalties, breaker_ids
from engine.decoding.penalty_run import PenaltyRun, dry_matches
from engine.decoding.sampling import draw, processed_probs

V = 12


def row(values: dict[int, float]) -> np.ndarray:
    x = np.zeros(V, dtype=np.float32)
    for k, v in values.items():
        x[k] = v
    return x


def test_repeat_frequency_presence_match_llama_cpp_by_hand():
    # context 5 7 5: token 5 seen twice, 7 once, 9 never
    p = Penalties(repeat_penalty=2.0, frequency_penalty=0.1, presence_penalty=0.3)
    out = PenaltyRun(p, [5, 7, 5]).first(row({5: 2.0, 7: -1.0, 9: 0.5, 3: 0.0}))
    assert out[5].item() == pytest.approx(2.0 / 2 - 2 * 0.1 - 0.3)     # positive logit: divided
    assert out[7].item() == pytest.approx(-1.0 * 2 - 0.1 - 0.3)        # negative: multiplied
    assert out[9].item() == 0.5 and out[3].item() == 0.0                # unseen: untouched


def test_repeat_last_n_counts_only_the_window():
    p = Penalties(repeat_penalty=1.0, frequency_penalty=1.0, repeat_last_n=2)
    out = PenaltyRun(p, [5, 5, 7, 5]).first(row({}))
    assert out[5].item() == -1.0 and out[7].item() == -1.0             # window: 7 5
    whole = PenaltyRun(Penalties(frequency_penalty=1.0, repeat_last_n=-1), [5, 5, 7, 5]).first(row({}))
    assert whole[5].item() == -3.0


def test_dry_follows_llama_cpps_worked_example():
    # llama.cpp's comment: "a b c c b c y a b c" -> emitting c would make "a b c" a 4-token
    # repeat (match 3), y a 3-token one (match 2); b's match (1) is under allowed_length 2
    a, b, c, y = 1, 2, 3, 4
    ctx = [a, b, c, c, b, c, y, a, b, c]
    assert dry_matches(np.array(ctx), len(ctx), 2) == {c: 3, y: 2}
    p = Penalties(dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=2)
    out = PenaltyRun(p, ctx).first(row({}))
    assert out[c].item() == pytest.approx(-0.8 * 1.75)
    assert out[y].item() == pytest.approx(-0.8)
    assert out[b].item() == 0.0 and out[a].item() == 0.0


def test_dry_repeat_is_cut_at_the_latest_breaker_and_breakers_are_never_penalised():
    ctx = [1, 2, 3, 4, 1, 2, 3]
    p = Penalties(dry_multiplier=1.0, dry_base=2.0, dry_allowed_length=2)
    assert PenaltyRun(p, ctx).first(row({}))[4].item() == pytest.approx(-2.0)            # match 3: 2**1
    # token 1 breaks sequences: only "2 3" (2 tokens after it) may count
    assert PenaltyRun(p, ctx, frozenset({1})).first(row({}))[4].item() == pytest.approx(-1.0)
    # a repeat that a breaker would extend leaves the breaker alone
    out = PenaltyRun(p, [7, 8, 9, 7, 8], frozenset({9})).first(row({}))
    assert out[9].item() == 0.0
    assert breaker_ids(["a", "b\n", None, "x:y", "q"], ("\n", ":")) == {1, 3}


def test_top_k_and_min_p_by_hand():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], dtype=np.float32))
    k2 = processed_probs(logits, 1.0, 1.0, top_k=2)
    assert k2.tolist() == pytest.approx([0.625, 0.375, 0, 0])
    # min_p 0.2: keep p >= 0.1 (0.2 x the top 0.5), before temperature
    mp = processed_probs(logits, 2.0, 1.0, min_p=0.2)
    kept = np.array([0.5, 0.3, 0.15], dtype=np.float32) ** 0.5
    assert mp.tolist() == pytest.approx((kept / kept.sum()).tolist() + [0.0], abs=1e-6)


def test_top_p_keeps_the_sorted_prefix_and_ties_by_ascending_id():
    """Against a full stable sort (equal probabilities: the lower id first), on peaked, flat and
    tied distributions, with and without top-k before it."""
    g = np.random.default_rng(3)
    for trial in range(60):
        V = int(g.choice([7, 3000, 49152]))
        logits = (g.standard_normal(V) * g.choice([0.2, 2.0, 8.0])).astype(np.float32)
        if trial % 3 == 0:
            logits = np.round(logits)                       # many equal probabilities
        top_p, top_k = float(g.choice([0.2, 0.9, 0.99])), int(g.choice([0, 40]))
        base = processed_probs(logits, 0.8, 1.0, top_k)
        order = np.argsort(-base, kind="stable")
        sp = base[order]
        want = np.zeros_like(base)
        want[order] = np.where(np.cumsum(sp) - sp >= top_p, 0.0, sp)
        got = processed_probs(logits, 0.8, top_p, top_k)
        assert np.array_equal(got > 0, want > 0) and np.allclose(got, want / want.sum(), atol=1e-7)
    tie = processed_probs(np.log(np.array([0.2, 0.4, 0.2, 0.2], dtype=np.float32)), 1.0, 0.7)
    assert tie.tolist() == pytest.approx([0.25, 0.5, 0.25, 0.0], abs=1e-6)   # of the 0.2s, ids 0 and 2


def test_draw_follows_the_weights_and_never_picks_a_zero():
    g = np.random.default_rng(0)
    w = np.zeros(5000, dtype=np.float32)
    w[[3, 1023, 1024, 4999]] = [0.1, 0.2, 0.3, 0.4]        # block edges (blocks of 1024) included
    n = 40000
    counts = np.bincount([draw(w, g) for _ in range(n)], minlength=len(w))
    assert counts.sum() == counts[[3, 1023, 1024, 4999]].sum()
    assert np.allclose(counts[[3, 1023, 1024, 4999]] / n, [0.1, 0.2, 0.3, 0.4], atol=0.01)
    assert draw(np.array([0.0, 0.0, 2.0], dtype=np.float32), g) == 2
    with pytest.raises(ValueError):
        draw(np.zeros(4, dtype=np.float32), g)


# ---- the batched tree pass against a naive reference ---------------------------------------
def naive(logits: np.ndarray, ctx: list[int], p: Penalties, breakers: frozenset[int]) -> np.ndarray:
    """llama.cpp's definitions, written the slow obvious way for one context."""
    out = logits.copy()
    win = ctx if p.repeat_last_n < 0 else ctx[max(0, len(ctx) - p.repeat_last_n):] if p.repeat_last_n else []
    for t in set(win):
        c = win.count(t)
        x = out[t].item()
        x = x * p.repeat_penalty if x <= 0 else x / p.repeat_penalty
        out[t] = x - c * p.frequency_penalty - p.presence_penalty
    if p.dry_multiplier > 0:
        w = ctx if p.dry_last_n < 0 else ctx[-p.dry_last_n:]
        after = [i for i, t in enumerate(w) if t in breakers]
        limit = len(w) - 1 - after[-1] if after else len(w)
        best: dict[int, int] = {}
        for j in range(len(w) - 1):
            m = 0
            while j - m >= 0 and w[j - m] == w[-1 - m]:
                m += 1
            m = min(m, limit)
            if m >= p.dry_allowed_length and len(w) > p.dry_allowed_length and limit >= p.dry_allowed_length:
                best[w[j + 1]] = max(best.get(w[j + 1], 0), m)
        for t, m in best.items():
            if t not in breakers:
                out[t] -= p.dry_multiplier * p.dry_base ** (m - p.dry_allowed_length)
    return out


@pytest.mark.parametrize("p", [
    Penalties(repeat_penalty=1.3, frequency_penalty=0.2, presence_penalty=0.1, repeat_last_n=6),
    Penalties(repeat_penalty=0.9, repeat_last_n=-1, frequency_penalty=0.4),
    Penalties(dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=2),
    Penalties(dry_multiplier=0.5, dry_allowed_length=3, dry_last_n=9, repeat_penalty=1.1, repeat_last_n=3),
])
def test_every_tree_node_is_penalised_after_its_own_path(p):
    rng = random.Random(7)
    nrng = np.random.default_rng(7)
    breakers = frozenset({0})
    for trial in range(30):
        ctx = [rng.randrange(V) for _ in range(rng.randrange(1, 25))]
        run = PenaltyRun(p, ctx[:-1], breakers)
        run.commit(ctx[-1:])                  # the root: the last emitted token
        b = TreeBuilder(ctx[-1])
        for _ in range(4):
            toks = [rng.randrange(1, 4) for _ in range(rng.randrange(1, 8))]   # small alphabet: repeats
            b.add(Candidate(toks, [0.9] * len(toks), "context"))
        tree = b.build(16)
        logits = nrng.standard_normal((tree.size, V), dtype=np.float32)
        got = run.apply_tree(logits.copy(), tree)
        for i in range(tree.size):
            path = [tree.token_list[k] for k in tree.path_to(i)[1:]]
            want = naive(logits[i], ctx + path, p, breakers)
            assert np.allclose(got[i], want, atol=1e-5), (trial, i, ctx, path)
    assert math.isfinite(float(got.sum()))
