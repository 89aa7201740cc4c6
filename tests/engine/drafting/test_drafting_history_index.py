"""The engine's history drafting corpus: indexed once per response, bounded with oldest-first
eviction, never rebuilt when a request starts; per-request sources drafted from apart; the
speculator's set-up counted in TTFT; greedy output unchanged (real model)."""
from __future__ import annotations

import random
import time

import pytest

from engine import Done, Step
from engine.decoding.drafting import Drafter, HistoryIndex, SuffixAutomaton
from engine.methods import METHOD_SPECS
from engine.runtime.profiling import CostCurve, CostModel, OnlineCost
from engine.decoding.speculative import DraftingSpeculator
from support.scripted_backend import chain_prompt, scripted_engine


def responses(n: int, length: int = 128, vocab: int = 5000, seed: int = 0) -> list[list[int]]:
    """Response-like token streams: phrases drawn from a shared pool (repeats across responses)."""
    rng = random.Random(seed)
    phrases = [[rng.randrange(vocab) for _ in range(rng.randint(3, 12))] for _ in range(400)]
    out = []
    for _ in range(n):
        r: list[int] = []
        while len(r) < length:
            r += rng.choice(phrases) if rng.random() < 0.7 else [rng.randrange(vocab)]
        out.append(r[:length])
    return out


def unique(n: int, length: int, base: int) -> list[list[int]]:
    """``n`` responses sharing no token with each other (nor with ``unique`` at another base)."""
    return [list(range(base + i * length, base + (i + 1) * length)) for i in range(n)]


def flat_cost() -> OnlineCost:
    return OnlineCost(CostModel({0: CostCurve([(1, 10.0), (2, 10.2), (32, 12.0)])}))


class CountAdds:
    """Counts ``SuffixAutomaton.add_sequence`` calls (any automaton) while active."""

    def __init__(self, monkeypatch):
        self.calls = 0
        orig = SuffixAutomaton.add_sequence

        def add_sequence(sam, toks):
            self.calls += 1
            return orig(sam, toks)

        monkeypatch.setattr(SuffixAutomaton, "add_sequence", add_sequence)


def history_drafts(sam: SuffixAutomaton, query: list[int], extra: SuffixAutomaton | None = None):
    d = Drafter(query, sam, sources_index=extra, use_context=False, use_calibration=False, use_reuse=False)
    return [c for c in d.candidates(16, 8) if c.source == "history"]


# ---- the index --------------------------------------------------------------------------------
def test_each_response_is_appended_once_without_rebuilding():
    h = HistoryIndex(budget_tokens=10**6)
    rs = responses(300, 64)
    for r in rs:
        sam, states = h.sam, h.sam.num_states
        h.add(r)
        assert h.sam is sam                                  # appended, not rebuilt
        assert h.sam.num_states <= states + 2 * (len(r) + 2)
    assert h.rebuilds == 0 and len(h) == 300 and h.tokens == 300 * 64
    assert h.responses[0] == tuple(rs[0]) and rs[-1] in h
    assert not h.sam._dirty                                  # eager counts: nothing to recount later
    h.add([])
    assert len(h) == 300


def test_starting_requests_with_1000_indexed_responses_never_rebuilds(monkeypatch):
    h = HistoryIndex()
    for r in responses(1000):
        h.add(r)
    sam, states, text = h.sam, h.sam.num_states, len(h.sam)
    adds = CountAdds(monkeypatch)
    query = responses(3, 40, seed=7)
    for method in ("hexa", "sam", "hexa-fill"):
        for q in query:
            sp = DraftingSpeculator(METHOD_SPECS[method], h, flat_cost(), max_tree=32, max_depth=16)
            sp.start(q[:-1], q[-1], None)
            assert sp.drafter.history is sam
            sp.propose()
    assert adds.calls == 0
    assert h.sam is sam and sam.num_states == states and len(sam) == text and not sam._dirty


def test_eviction_keeps_the_budget_and_forgets_only_the_oldest():
    budget, length = 2000, 100
    h = HistoryIndex(budget_tokens=budget, keep=0.75)
    rs = unique(60, length, base=1000)
    for r in rs:
        h.add(r)
        assert h.tokens <= budget
        assert len(h.sam) <= budget + 2 * len(h)             # the automaton holds only what is kept
    kept = h.responses
    assert kept == tuple(tuple(r) for r in rs[-len(kept):])  # the newest, oldest first
    # amortized: each rebuild follows >= (1 - keep) * budget appended tokens
    assert 1 <= h.rebuilds <= 60 * length // int(0.25 * budget) + 1
    assert len(kept) * length >= 0.75 * budget - length
    newest, evicted = rs[-1], rs[0]
    drafts = history_drafts(h.sam, newest[:10])
    assert drafts and drafts[0].tokens == newest[10:18]
    assert not history_drafts(h.sam, evicted[:10])
    assert evicted not in h and newest in h


def test_a_response_longer_than_the_budget_keeps_its_tail():
    h = HistoryIndex(budget_tokens=100)
    h.add(list(range(50)))
    h.add(list(range(1000, 1300)))
    assert len(h) == 1 and h.tokens == 100 and h.responses[0] == tuple(range(1200, 1300))


# ---- per-request sources -----------------------------------------------------------------------
def test_request_sources_are_indexed_apart_and_reused():
    h = HistoryIndex()
    old = unique(5, 50, base=1000)
    for r in old:
        h.add(r)
    sam, states = h.sam, h.sam.num_states
    src = unique(3, 50, base=5000)
    assert h.request_index(old) is None                      # all already in the engine corpus
    a = h.request_index(src + [old[0]])
    assert a is not None and len(a) == 3 * 50 + 2 * 3 - 1    # only the 3 new ones
    assert h.request_index(src) is a                         # same sources: the same automaton
    more = unique(1, 50, base=9000)
    b = h.request_index(src + more)                          # a superset: extended in place
    assert b is a and len(b) == 4 * 50 + 2 * 4 - 1
    c = h.request_index(src[:1])                             # not a superset: a fresh one
    assert c is not a and len(c) == 51
    assert h.sam is sam and sam.num_states == states         # the engine corpus is untouched
    # both automata are matched: the engine's history and the request's sources
    assert history_drafts(h.sam, old[2][:10])[0].tokens == old[2][10:18]
    assert history_drafts(h.sam, src[0][:10], c)[0].tokens == src[0][10:18]
    assert not history_drafts(h.sam, src[0][:10])


def test_linear_drafter_takes_the_longer_history_match():
    engine_h = SuffixAutomaton()
    engine_h.add_sequence([1, 2, 3, 4, 50, 51])
    request_h = SuffixAutomaton()
    request_h.add_sequence([9, 2, 3, 4, 60, 61])
    d = Drafter([9, 2, 3, 4], engine_h, sources_index=request_h, mode="linear", use_context=False)
    assert d._linear(2).tokens == [60, 61]
    d = Drafter([1, 2, 3, 4], engine_h, sources_index=request_h, mode="linear", use_context=False)
    assert d._linear(2).tokens == [50, 51]


# ---- through the engine (scripted model: fast) ---------------------------------------------------
def test_engine_requests_match_the_indexed_history_without_rebuilding(monkeypatch):
    engine = scripted_engine()
    rng = random.Random(3)
    for _ in range(1000):
        engine.index_response([rng.randrange(3, 64) for _ in range(128)])
    ids = chain_prompt(7, 60)
    ref = [e for e in engine.generate(ids, method="vanilla", max_new_tokens=40)][-1]
    engine.index_response(list(ref.token_ids))               # an earlier answer to the same prompt
    sam, states = engine.history.sam, engine.history.sam.num_states
    adds = CountAdds(monkeypatch)
    for method in ("hexa", "sam"):
        done = [e for e in engine.generate(ids, method=method, max_new_tokens=40)][-1]
        assert done.token_ids == ref.token_ids
        assert done.accepted_by_source.get("history", 0) > 0
    assert adds.calls == 0 and engine.history.sam is sam and sam.num_states == states


def test_engine_request_sources_do_not_join_the_engine_history():
    engine = scripted_engine({t: t + 1 for t in range(3, 60)})
    ids = list(range(40, 45))
    ref = [e for e in engine.generate(ids, method="vanilla", max_new_tokens=12)][-1]
    states = engine.history.sam.num_states
    done = [e for e in engine.generate(ids, method="hexa", max_new_tokens=12,
                                       sources=[list(ref.token_ids)])][-1]
    assert done.token_ids == ref.token_ids and done.accepted_by_source.get("history", 0) > 0
    assert len(engine.history) == 0 and engine.history.sam.num_states == states


def test_ttft_includes_the_speculator_start():
    engine = scripted_engine()
    make = engine._speculator

    def slow_speculator(*a):
        sp = make(*a)
        start = sp.start

        def slow_start(*args):
            time.sleep(0.2)
            return start(*args)

        sp.start = slow_start
        return sp

    engine._speculator = slow_speculator
    done = [e for e in engine.generate(chain_prompt(7, 30), method="hexa", max_new_tokens=4)][-1]
    assert isinstance(done, Done)
    assert done.ttft_ms >= done.prefill_ms + 200


# ---- the real model: lossless with a populated history ---------------------------------------
@pytest.fixture
def fresh_history(engine):
    """The session engine with its own history for this test, restored afterwards."""
    saved = engine.history
    engine.history = HistoryIndex()
    yield engine
    engine.history = saved


def test_greedy_hexa_equals_vanilla_with_a_populated_history(fresh_history, dev_cases):
    engine = fresh_history
    prompts = [engine.chat_ids([{"role": "user", "content": c["turns"][0][:600]}]) for c in dev_cases[:2]]
    refs = []
    for ids in prompts:
        ref = [e for e in engine.generate(ids, method="vanilla", max_new_tokens=24)][-1]
        refs.append(ref.token_ids)
    for r in responses(200, vocab=engine.model.config.vocab_size):
        engine.index_response(r)
    # half of each earlier answer as history: history drafts are proposed, some rejected
    for t in refs:
        engine.index_response(list(t[:12]) + list(t[14:18]))
    history_accepted = 0
    for ids, want in zip(prompts, refs):
        events = list(engine.generate(ids, method="hexa", max_new_tokens=24))
        done = events[-1]
        assert done.token_ids == want
        history_accepted += done.accepted_by_source.get("history", 0)
        assert all(s.accepted >= 1 for s in events if isinstance(s, Step))
    assert history_accepted > 0
