"""The router's policies, checked on numbers (fast tier): budget accuracy, the l_th integral, the
β solve, decision time, the migration buffer and handover, persistence of the fits."""
from __future__ import annotations

import json
import random
import time

import pytest

from engine.errors import EngineError
from engine.routing.bench import REGIME_PRICES, Setup, table
from engine.routing.migration import buffer_tokens, same_vocabulary, text_handover, worth_migrating
from engine.routing.models import (DeviceModel, Prices, RoutingState, ServerTTFT, load_state, replay_samples,
                                   save_state)
from engine.routing.policy import DiscoDevice, DiscoServer, make_policy, regime, server_threshold
from engine.routing.simulate import World, run

RNG = random.Random(7)
LENGTHS = [RNG.choice([40, 60, 90]) for _ in range(60)] + [RNG.randint(300, 1500) for _ in range(60)]
DEVICE = DeviceModel(0.003, 0.05, 80.0, "test")
TRACE = ServerTTFT(replay_samples("gpt-4o-mini", 2000, seed=1))
FIT = ServerTTFT(replay_samples("gpt-4o-mini", 2000, seed=2))


def test_device_fit_recovers_a_line():
    pts = [(n, 0.002 * n + 0.1) for n in (64, 256, 512, 1024)]
    m = DeviceModel.fit(pts, 50.0)
    assert m.k == pytest.approx(0.002) and m.c == pytest.approx(0.1)
    with pytest.raises(EngineError):
        DeviceModel.fit([(64, 0.2), (64, 0.3)], 50.0)


def test_empirical_distribution_quantile_and_cdf():
    f = ServerTTFT([0.1 * i for i in range(1, 11)])
    assert f.quantile(0.5) == pytest.approx(0.5) and f.quantile(1.0) == pytest.approx(1.0)
    assert f.cdf(0.55) == pytest.approx(0.5) and f.cdf(0.0) == 0.0
    f.observe(0.05)
    assert f.quantile(0.0) == pytest.approx(0.05)


def test_server_threshold_solves_the_integral():
    for b in (0.1, 0.3, 0.5, 0.8):
        th = server_threshold(LENGTHS, b)
        below = sum(x for x in LENGTHS if x <= th) / sum(LENGTHS)
        nxt = min((x for x in LENGTHS if x > th), default=None)
        # ∫₀^l_th l·p(l) dl ≤ (1 − b)·E[l], and the next length would pass it
        assert below <= 1 - b + 1e-9
        assert nxt is None or below + sum(x for x in LENGTHS if x == nxt) / sum(LENGTHS) > 1 - b


def test_ties_at_the_threshold_are_split_to_keep_the_budget():
    lengths = [100] * 10 + [512] * 30               # prompts cut to a maximum share one length
    pol = DiscoServer(lengths, 0.3)
    rng = random.Random(1)
    sent = sum(x for _ in range(200) for x in lengths if pol.plan(x, rng).server_at is not None)
    assert sent / (200 * sum(lengths)) == pytest.approx(0.3, abs=0.01)


def test_beta_solves_the_device_share():
    for b in (0.1, 0.3, 0.5):
        p = DiscoDevice(LENGTHS, b, DEVICE, FIT)
        assert p.expected_share == pytest.approx(b, abs=0.01)
        assert p.wait(p.l_th) == 0.0 and p.wait(max(LENGTHS)) <= p.cap
    with pytest.raises(EngineError):
        DiscoDevice(LENGTHS, 1.5, DEVICE, FIT)


@pytest.mark.parametrize("reg", ["dc", "sc"])
@pytest.mark.parametrize("b", [0.1, 0.3, 0.5])
def test_budget_used_is_within_002_of_b(reg, b):
    prices = REGIME_PRICES[reg]
    world = World(DEVICE, TRACE, FIT, 60.0, prices)
    outs = [64] * len(LENGTHS)
    for name in ("disco", "random"):
        pol = make_policy(name, b=b, lengths=LENGTHS, device=DEVICE, server=FIT, prices=prices)
        row = run(world, pol, LENGTHS, outs, regime=reg, repeats=40)
        assert abs(row.budget - b) <= 0.02, (name, row.budget)


def test_regime_follows_the_prices():
    assert regime(Prices(server_in=1e-7, server_out=1e-6)) == "sc"
    assert regime(Prices(device_in=1e-7)) == "dc"


@pytest.mark.parametrize("make", [lambda: DiscoDevice(LENGTHS, 0.3, DEVICE, FIT), lambda: DiscoServer(LENGTHS, 0.3)])
def test_decision_takes_under_a_millisecond(make):
    pol = make()
    rng = random.Random(0)
    t0 = time.perf_counter()
    for i in range(10000):
        pol.plan(LENGTHS[i % len(LENGTHS)], rng)
    assert (time.perf_counter() - t0) / 10000 < 1e-3


def test_migration_rule_and_buffer():
    assert buffer_tokens(5.0, 1.3) == 7 and buffer_tokens(5.0, 0.0) == 1
    assert worth_migrating(1e-6, 200, 1e-4) and not worth_migrating(1e-6, 50, 1e-4)
    assert not worth_migrating(-1e-6, 1000, 0.0)
    assert text_handover("The cat sat on") == ("The cat sat", " on")
    assert text_handover("word") == ("", "word")
    assert same_vocabulary([[1, 2], [3]], [[1, 2], [3]]) and not same_vocabulary([[1, 2]], [[1, 3]])


def test_migration_keeps_the_reader_fed_and_cuts_cost():
    """Server-constrained: long answers move from the paid server to the device; the buffer
    B = r_c·t_m hides the device's prefill, so the reader never waits."""
    prices = REGIME_PRICES["sc"]
    world = World(DEVICE, TRACE, FIT, 60.0, prices)
    pol = make_policy("disco", b=0.5, lengths=LENGTHS, device=DEVICE, server=FIT, prices=prices)
    outs = [200] * len(LENGTHS)
    plain = run(world, pol, LENGTHS, outs, regime="sc", repeats=5)
    moved = run(world, pol, LENGTHS, outs, regime="sc", repeats=5, migrate=True)
    assert moved.migrations > 0 and moved.cost < plain.cost
    assert moved.delayed == 0 and moved.p99_tbt <= 0.25
    assert moved.p99_ttft == plain.p99_ttft        # migration happens after the first token


def test_disco_beats_the_random_baseline_in_simulation():
    lengths = [len_ for len_ in LENGTHS]
    setup = Setup(lengths, [64] * len(lengths), DEVICE, TRACE, FIT, 60.0)
    rows = table(setup, [0.5], regimes=("sc",), repeats=10)
    by = {r.policy: r for _, _, r in rows}
    assert by["disco-sc"].p99_ttft <= 0.8 * by["random-sc"].p99_ttft
    assert by["disco-sc"].mean_ttft <= by["random-sc"].mean_ttft


def test_state_round_trip(tmp_path):
    path = tmp_path / "routing.json"
    assert load_state(path).device is None
    st = RoutingState(DEVICE)
    st.observe("lab", 0.42)
    save_state(path, st)
    back = load_state(path)
    assert back.device == DEVICE and back.server("lab").quantile(0.5) == pytest.approx(0.42)
    path.write_text(json.dumps({"device": {"k": "x"}}))
    with pytest.raises(EngineError):
        load_state(path)
