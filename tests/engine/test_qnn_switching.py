"""The progressive switching plan (docs/architecture.md, technique 1) on made-up cost figures."""
from __future__ import annotations

from engine.runtime.qnn.switching import Costs, plan, simulate


def costs(load, g1=1000.0, g2=3000.0, n=5) -> Costs:
    return Costs(load_ms=[load] * n, g1_ms=[g1] * n, g2_ms=[g2] * n)


def test_cheap_loads_switch_after_the_last_chunk_and_hide_behind_later_blocks():
    switch, t = plan(4, costs(load=300))
    assert switch == [3] * 5                   # no block ever runs prefill on G2
    # each load hides behind the computes of the blocks after it; only the last block's shows
    assert t.prefill_ms == 4 * 5 * 1000
    assert t.stall_ms == 300 and t.exposed_ms == 300
    assert t.hidden_ms == 4 * 300


def test_expensive_loads_move_some_switches_a_chunk_earlier():
    c = costs(load=3000)
    late = simulate(4, c, [3] * 5)
    switch, t = plan(4, c)
    assert switch != [3] * 5 and min(switch) == 2
    assert t.ready_ms < late.ready_ms          # less waiting than loading everything at the end
    # never worse than loading every G2 after prefill, one after another
    assert t.ready_ms <= 4 * 5 * 1000 + 5 * 3000


def test_switching_before_prefill_runs_every_chunk_on_g2():
    t = simulate(2, costs(load=100), [-1] * 5)
    assert t.prefill_ms >= 2 * 5 * 3000


def test_one_chunk_prompt_still_hides_all_but_the_last_load():
    switch, t = plan(1, costs(load=500, n=6))
    assert switch == [0] * 6 and t.stall_ms == 500


def test_without_early_switches_every_block_stays_on_g1_for_the_whole_prefill():
    switch, _ = plan(4, costs(load=3000), early=False)
    assert switch == [3] * 5
