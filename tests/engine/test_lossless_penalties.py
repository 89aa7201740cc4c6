"""Speculation stays lossless under every penalty: greedy, each speculative method emits exactly
vanilla's tokens with the same penalties (on the real model); sampling, the speculative output
distribution equals the exact distribution of plain sampling with the penalties, top-k and min-p."""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine.decoding.penalties import Penalties
from engine.decoding.penalty_run import PenaltyRun
from engine.decoding.sampling import processed_probs

from test_lossless import SPECULATIVE, outcome, prompt, run

MAX_NEW = 48
CONFIGS = {
    "repeat": Penalties(repeat_penalty=1.3, repeat_last_n=64),
    "frequency+presence": Penalties(frequency_penalty=0.6, presence_penalty=0.4, repeat_last_n=-1),
    "dry": Penalties(dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=2, dry_last_n=-1),
    # the modes' DRY counts the answer alone; 48 tokens are too few for 0.8 to change these answers
    "answer only": Penalties(repeat_penalty=1.3, dry_multiplier=1.0, dry_allowed_length=1, penalize_prompt=False),
    "all, short windows": Penalties(repeat_penalty=1.5, repeat_last_n=8, frequency_penalty=0.3,
                                    dry_multiplier=1.5, dry_allowed_length=2, dry_last_n=24),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_greedy_speculation_is_identical_to_vanilla_under_penalties(engine, dev_cases, name):
    pen = CONFIGS[name]
    mismatches, changed, accepted = [], 0, 0
    for case in dev_cases[:2]:
        ids = prompt(engine, case)
        plain, _ = run(engine, ids, "vanilla", max_new_tokens=MAX_NEW)
        ref, _ = run(engine, ids, "vanilla", max_new_tokens=MAX_NEW, penalties=pen)
        changed += ref.token_ids != plain.token_ids
        sources = [list(ref.token_ids[: len(ref.token_ids) // 2])]
        for m in SPECULATIVE:
            done, steps = run(engine, ids, m, max_new_tokens=MAX_NEW, sources=sources, penalties=pen)
            if done.token_ids != ref.token_ids:
                mismatches.append((case["id"], m))
            accepted += sum(s.accepted - 1 for s in steps)
    assert not mismatches, mismatches
    assert changed, "the penalties changed no output: the test would not exercise them"
    assert accepted > 0, "no draft was ever accepted: the test would not exercise verification"


# ---- sampling ---------------------------------------------------------------------------------
PROMPT = "one two three four one two three four one two three four one two three"
PEN = Penalties(repeat_penalty=1.4, repeat_last_n=16, frequency_penalty=0.3, dry_multiplier=0.8)
TEMPERATURE, TOP_K, MIN_P = 1.0, 40, 0.02
TRIALS = 200


def exact_two_token_distribution(engine, ids) -> dict[tuple, float]:
    """P(x1, x2) of plain sampling with PEN, top-k and min-p (penalties follow each prefix)."""
    model = engine.model
    breakers = engine.breakers(PEN.dry_breakers)
    cache = model.new_cache(len(ids) + 64)
    model.begin_prefill(len(ids))
    try:
        h = model.forward(np.array(ids, dtype=np.int64), np.arange(len(ids), dtype=np.int64), cache)
        raw1 = model.logits(h[-1:])[0]
    finally:
        model.end_prefill()
    cache.commit(len(ids))
    p1 = processed_probs(PenaltyRun(PEN, ids, breakers).first(raw1), TEMPERATURE, 1.0, TOP_K, MIN_P)
    firsts = [int(t) for t in np.flatnonzero(p1 > 1e-3)]
    n = len(firsts)
    mask = np.concatenate([np.ones((n, cache.length), dtype=np.bool_), np.eye(n, dtype=np.bool_)], 1)
    raw2 = model.logits(model.forward(np.array(firsts, dtype=np.int64), np.full(n, cache.length, dtype=np.int64),
                                      cache, mask))
    dist: dict = {}
    for i, x1 in enumerate(firsts):
        if x1 in engine.eos_ids:
            dist[("eos",)] = dist.get(("eos",), 0.0) + float(p1[x1])
            continue
        p2 = processed_probs(PenaltyRun(PEN, ids + [x1], breakers).first(raw2[i]), TEMPERATURE, 1.0, TOP_K, MIN_P)
        for x2 in np.flatnonzero(p2 > 1e-3).tolist():
            key = (x1, "eos") if x2 in engine.eos_ids else (x1, x2)
            dist[key] = dist.get(key, 0.0) + float(p1[x1] * p2[x2])
    return dist


def test_sampling_under_penalties_has_plain_samplings_distribution(engine):
    ids = engine.chat_ids([{"role": "user", "content": "Continue: " + PROMPT}]) + engine.encode(PROMPT)
    exact = exact_two_token_distribution(engine, ids)
    big = {k: p for k, p in exact.items() if p * TRIALS >= 5}
    assert len(big) >= 3, big
    other_p = 1.0 - sum(big.values())
    counts = {k: 0 for k in big}
    other = drafted = accepted = 0
    for seed in range(TRIALS):
        # hexa-fill drafts a full tree every step: hexa's learned confidence, after other tests on
        # this prompt, may draft too little for verification to be exercised
        done, steps = run(engine, ids, "hexa-fill", max_new_tokens=2, temperature=TEMPERATURE, seed=seed,
                          top_k=TOP_K, min_p=MIN_P, penalties=PEN)
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
    z = 3.0902   # chi-square 99.9% quantile (Wilson-Hilferty)
    limit = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
    assert stat < limit, (stat, limit, counts, {k: round(p * TRIALS, 1) for k, p in big.items()})


def test_the_penalised_distribution_differs_from_the_plain_one(engine):
    """The distribution test above is only a test of the penalties if they move the distribution."""
    ids = engine.chat_ids([{"role": "user", "content": "Continue: " + PROMPT}]) + engine.encode(PROMPT)
    model = engine.model
    cache = model.new_cache(len(ids) + 4)
    raw = model.logits(model.forward(np.array(ids, dtype=np.int64), np.arange(len(ids), dtype=np.int64), cache)[-1:])[0]
    plain = processed_probs(raw, TEMPERATURE, 1.0)
    pen = processed_probs(PenaltyRun(PEN, ids, engine.breakers(PEN.dry_breakers)).first(raw), TEMPERATURE, 1.0)
    assert 0.5 * float(np.abs(plain - pen).sum()) > 0.2      # total variation distance
