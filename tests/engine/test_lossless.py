"""End to end: every speculative method emits exactly vanilla's greedy tokens on real prompts,
and with temperature > 0 the speculative output distribution is that of plain sampling."""
from __future__ import annotations

import math

import numpy as np

from engine import Done, Step
from engine.methods import METHODS

SPECULATIVE = [m for m in METHODS if m != "vanilla"]
MAX_PROMPT = 700
MAX_NEW = 40


def run(engine, ids, method, **kw) -> tuple[Done, list[Step]]:
    steps, done = [], None
    for ev in engine.generate(ids, method=method, **kw):
        if isinstance(ev, Step):
            steps.append(ev)
        elif isinstance(ev, Done):
            done = ev
    return done, steps


def prompt(engine, case) -> list[int]:
    text = case["turns"][0]
    ids = engine.chat_ids([{"role": "user", "content": text}])
    while len(ids) > MAX_PROMPT:
        text = text[: int(len(text) * MAX_PROMPT / len(ids) * 0.95)]
        ids = engine.chat_ids([{"role": "user", "content": text}])
    return ids


def test_greedy_speculative_methods_are_token_identical_to_vanilla(engine, dev_cases):
    mismatches = []
    spec_steps = 0
    accepted_drafts = 0
    for case in dev_cases:
        ids = prompt(engine, case)
        ref, _ = run(engine, ids, "vanilla", max_new_tokens=MAX_NEW)
        # an earlier response as history source exercises the history drafter too
        sources = [list(ref.token_ids[: len(ref.token_ids) // 2])]
        for m in SPECULATIVE:
            done, steps = run(engine, ids, m, max_new_tokens=MAX_NEW, sources=sources)
            if done.token_ids != ref.token_ids:
                mismatches.append((case["id"], m))
            # the prefill gives token 1, each step its accepted drafts + bonus (the last one cut)
            assert sum(s.accepted for s in steps) + 1 >= done.new_tokens
            spec_steps += len(steps)
            accepted_drafts += sum(s.accepted - 1 for s in steps)
            for s in steps:
                assert len(s.sources) == s.accepted and s.sources[-1] == "model"
                assert 0 <= s.accepted - 1 <= s.proposed
    assert not mismatches, mismatches
    assert accepted_drafts > 0, "no draft was ever accepted: the test would not exercise verification"


# ---- sampling ---------------------------------------------------------------------------------
SAMPLE_PROMPT = "one two three four one two three four one two three four one two three"
TEMPERATURE = 1.0
TRIALS = 200


def exact_two_token_distribution(engine, ids) -> dict[tuple[int, int], float]:
    """P(x1, x2) of plain sampling at TEMPERATURE, for x1 with p > 1e-3 (the rest lumped)."""
    from engine.decoding.sampling import processed_probs

    model = engine.model
    cache = model.new_cache(len(ids) + 64)
    model.begin_prefill(len(ids))   # the prompt in prefill's arithmetic, decoding passes in theirs
    try:
        h = model.forward(np.array(ids, dtype=np.int64), np.arange(len(ids), dtype=np.int64), cache)
        p1 = processed_probs(model.logits(h[-1:])[0], TEMPERATURE, 1.0)
    finally:
        model.end_prefill()
    cache.commit(len(ids))
    firsts = [int(t) for t in np.flatnonzero(p1 > 1e-3)]
    # one pass: all candidate first tokens as siblings (each attends the past and itself)
    n = len(firsts)
    mask = np.concatenate([np.ones((n, cache.length), dtype=np.bool_), np.eye(n, dtype=np.bool_)], 1)
    h2 = model.forward(np.array(firsts, dtype=np.int64), np.full(n, cache.length, dtype=np.int64), cache, mask)
    p2 = processed_probs(model.logits(h2), TEMPERATURE, 1.0)
    dist: dict = {}
    for i, x1 in enumerate(firsts):
        if x1 in engine.eos_ids:                 # generation ends: the outcome is just "EOS"
            dist[("eos",)] = dist.get(("eos",), 0.0) + float(p1[x1])
            continue
        for x2 in np.flatnonzero(p2[i] > 1e-3).tolist():
            key = (x1, "eos") if x2 in engine.eos_ids else (x1, x2)
            dist[key] = dist.get(key, 0.0) + float(p1[x1] * p2[i, x2])
    return dist


def outcome(done: Done) -> tuple:
    toks = list(done.token_ids[:2])
    if len(toks) < 2 and done.stop_reason == "eos":
        toks.append("eos")
    return tuple(toks)


def test_sampling_speculative_distribution_equals_plain_sampling(engine):
    ids = engine.chat_ids([{"role": "user", "content": "Continue: " + SAMPLE_PROMPT}]) + \
        engine.encode(SAMPLE_PROMPT)
    exact = exact_two_token_distribution(engine, ids)
    # bins: outcomes with expected count >= 5, the rest lumped into one "other" bin
    big = {k: p for k, p in exact.items() if p * TRIALS >= 5}
    assert len(big) >= 3, big
    other_p = 1.0 - sum(big.values())
    counts = {k: 0 for k in big}
    other = 0
    drafted = accepted = 0
    for seed in range(TRIALS):
        done, steps = run(engine, ids, "hexa", max_new_tokens=2, temperature=TEMPERATURE, seed=seed)
        key = outcome(done)
        if key in counts:
            counts[key] += 1
        else:
            other += 1
        drafted += sum(s.proposed for s in steps)
        accepted += sum(s.accepted - 1 for s in steps)
    assert drafted > 0 and accepted > 0, "the speculative path was not exercised"
    stat = sum((counts[k] - p * TRIALS) ** 2 / (p * TRIALS) for k, p in big.items())
    df = len(big) - 1
    if other_p * TRIALS >= 1:
        stat += (other - other_p * TRIALS) ** 2 / (other_p * TRIALS)
        df += 1
    # chi-square 99.9% quantile (Wilson-Hilferty)
    z = 3.0902
    limit = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
    assert stat < limit, (stat, limit, counts, {k: round(p * TRIALS, 1) for k, p in big.items()})
