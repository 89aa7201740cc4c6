"""The app decodes about as fast as the engine alone (it decoded 4-13x slower when every token was
drawn as it came). A benchmark-style check with a generous margin, not a timing assertion: the
prompt runs through the headless app and through the engine alone on the same ids, alternating
which goes first; the figure the project stands by comes from ``hexa bench --app``.

One pair is ~0.6 s of decoding each way: on a shared 2-core machine a neighbour's burst moved
single pairs between 0.66x and 0.93x within a minute (a CI run saw 0.68x twice at the default two
pairs), so up to four pairs are drawn and the first at or above the floor ends the test. An app that
really decoded at half the engine's speed fails all four."""
from __future__ import annotations

import pytest

from app.tui.bench import measure

# the benchmark tier (make bench), not the correctness suite: a speed ratio on a shared machine;
# slow too, so that `-m "not slow"` (which replaces the default `-m "not bench"`) leaves it out
pytestmark = [pytest.mark.bench, pytest.mark.slow, pytest.mark.timeout(600)]
PROMPT = "List ten tips for learning to cook, one per line."


def test_the_app_decodes_near_the_engines_speed(real_engine):
    pairs = []
    for k in range(4):
        p = measure(real_engine, PROMPT, "vanilla", 200, engine_first=k % 2 == 1)
        assert p.app_tokens == p.engine_tokens, "the app and the engine answered differently"
        pairs.append(p)
        if p.ratio >= 0.7:
            break
    best = max(p.ratio for p in pairs)
    assert best >= 0.7, [(round(p.app_decode_tok_s, 1), round(p.engine_decode_tok_s, 1)) for p in pairs]
