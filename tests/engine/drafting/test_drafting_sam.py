import random

import pytest

from engine.decoding.drafting.suffix_automaton import SuffixAutomaton


def occurrences(text, w):
    return sum(1 for i in range(len(text) - len(w) + 1) if text[i:i + len(w)] == w)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_self_match_and_counts_match_brute_force(mode):
    rng = random.Random(1)
    for _ in range(40):
        text = [rng.randint(0, 3) for _ in range(rng.randint(1, 30))]
        sam = SuffixAutomaton(mode)
        for i, t in enumerate(text):
            sam.extend(t)
            cur = text[:i + 1]
            want = max((l for l in range(1, len(cur)) if occurrences(cur, cur[-l:]) >= 2), default=0)
            state, L = sam.self_match()
            assert L == want, (cur, L, want)
            if L:
                assert sam.count(state) == occurrences(cur, cur[-L:])


def test_eager_and_lazy_counts_agree():
    rng = random.Random(2)
    text = [rng.randint(0, 5) for _ in range(300)]
    a, b = SuffixAutomaton("eager"), SuffixAutomaton("lazy")
    a.extend_many(text)
    b.extend_many(text)
    assert a.num_states == b.num_states
    assert [a.count(s) for s in range(1, a.num_states)] == [b.count(s) for s in range(1, b.num_states)]


def test_continuations_have_exact_counts_and_probs():
    # after [1, 2, 3]: 7 follows twice, 8 once; the query end (last [1,2,3]) has no continuation
    text = [1, 2, 3, 7, 9, 1, 2, 3, 8, 1, 2, 3, 7, 9, 5, 1, 2, 3]
    sam = SuffixAutomaton("eager")
    sam.extend_many(text)
    state, L = sam.self_match()
    assert L == 3  # [5, 1, 2, 3] never occurred before
    conts = sam.continuations(state, L, max_len=3, max_branches=4)
    assert conts, "expected continuations"
    # brute force: tokens following earlier occurrences of the matched suffix
    suffix = text[-L:]
    followers = [text[i + L] for i in range(len(text) - L) if text[i:i + L] == suffix]
    best = max(set(followers), key=followers.count)
    assert conts[0].tokens[0] == best
    assert conts[0].probs[0] == pytest.approx(followers.count(best) / len(followers))
    assert conts[0].counts[0] == followers.count(best)
    assert (best, conts[0].probs[0]) == (7, pytest.approx(2 / 3))


def test_continuation_branches_and_ranking():
    text = [1, 2, 3, 7, 9, 1, 2, 3, 8, 4, 1, 2, 3, 7, 9, 5, 0, 1, 2, 3]
    sam = SuffixAutomaton("eager")
    sam.extend_many(text)
    state, L = sam.self_match()
    assert text[-L:][-3:] == [1, 2, 3]
    conts = sam.continuations(state, L, max_len=2, max_branches=4)
    firsts = {c.tokens[0]: c.probs[0] for c in conts}
    if L == 3:
        assert firsts[7] == pytest.approx(2 / 3) and firsts[8] == pytest.approx(1 / 3)
        assert conts[0].tokens == [7, 9]
    # probabilities along a path are conditional and lie in (0, 1]
    for c in conts:
        assert all(0 < p <= 1 for p in c.probs)
        assert len(c.tokens) <= 2


def test_history_matcher_matches_brute_force_and_never_crosses_sequences():
    rng = random.Random(3)
    seqs = [[rng.randint(0, 4) for _ in range(rng.randint(3, 15))] for _ in range(6)]
    sam = SuffixAutomaton("lazy")
    for s in seqs:
        sam.add_sequence(s)
    query = [rng.randint(0, 4) for _ in range(60)]
    m = sam.matcher()
    for i, t in enumerate(query):
        m.feed(t)
        cur = query[:i + 1]
        want = 0
        for l in range(1, len(cur) + 1):
            if any(occurrences(s, cur[-l:]) for s in seqs):
                want = l
        assert m.length == want
        if m.length:
            # count = occurrences across the corpus, each sequence counted separately
            assert sam.count(m.state) == sum(occurrences(s, cur[-m.length:]) for s in seqs)


def test_separators_are_never_proposed():
    sam = SuffixAutomaton("lazy")
    sam.add_sequence([5, 6, 7])
    sam.add_sequence([5, 6, 8, 9])
    m = sam.matcher()
    m.feed_many([5, 6])
    conts = sam.continuations(m.state, m.length, max_len=5, max_branches=4)
    got = sorted(tuple(c.tokens) for c in conts)
    assert got == [(7,), (8, 9)]
    assert all(t >= 0 for c in conts for t in c.tokens)
    m.feed(7)
    assert sam.continuations(m.state, m.length, 5) == []   # [5,6,7] ended its sequence


def test_best_continuation_follows_most_frequent_edge():
    sam = SuffixAutomaton("eager")
    sam.extend_many([4, 1, 2, 5, 4, 1, 3, 6, 4, 1, 2, 7, 4])
    state, L = sam.self_match()
    assert L == 1
    c = sam.best_continuation(state, L, 3)
    assert c.tokens[:2] == [1, 2]
    assert c.probs[0] == pytest.approx(1.0)
    assert c.probs[1] == pytest.approx(2 / 3)


def test_repetitive_loop_stays_cheap():
    # a degenerate generation loop: counts stay exact and the index small
    sam = SuffixAutomaton("eager")
    sam.extend_many([i % 7 for i in range(2000)])
    state, L = sam.self_match()
    assert L == 1993
    assert sam.count(state) == 2
    assert sam.num_states <= 2 * 2000


def test_first_step_ratio_bounds_every_continuations_first_step():
    """The drafter skips a walk whose best first step cannot pay: the bound must hold for every
    walk, and be the best first kid's own ratio (reached when the walk keeps every branch)."""
    rng = random.Random(4)
    reached = 0
    for _ in range(200):
        sam = SuffixAutomaton(rng.choice(["eager", "lazy"]))
        for _ in range(rng.randint(1, 3)):
            sam.add_sequence([rng.randrange(rng.choice([3, 10, 50])) for _ in range(rng.randint(3, 200))])
        for _ in range(10):
            state = rng.randrange(1, sam.num_states)
            bound = sam.first_step_ratio(state)
            firsts = [c.probs[0] for c in sam.continuations(state, 1, rng.randint(1, 8), rng.randint(1, 4), rng.randint(1, 40))]
            assert all(p <= bound for p in firsts)
            everything = [c.probs[0] for c in sam.continuations(state, 1, 1, 10 ** 6, 10 ** 6)]
            assert max(everything, default=0.0) == bound
            reached += bool(everything)
    assert reached >= 500
