"""Device cost profiles (``--cost-profile``) in the switching planner, the tree sizer and the bench's
estimated device time. The numbers are made up and worked out by hand in the comments; the last
test runs them through a real qnn engine (Qualcomm's HTP emulator)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.bench.methods import device_estimate
from engine.bench.runner import BenchOptions, _with_device_note, format_table, summarize
from engine.decoding.drafting import ConfidenceMap
from engine.errors import EngineError
from engine.methods import method_spec
from engine.runtime.profiling import CostCurve, CostModel, OnlineCost, device_cost_model
from engine.runtime.qnn import blocks
from engine.runtime.qnn.blocks import BlockGraphs, GraphLedger
from engine.runtime.qnn.cost_profile import DeviceCostProfile
from engine.runtime.qnn.switching import plan, simulate
from engine.decoding.speculative import DraftingSpeculator

G1, G2 = 64, 8
LENGTHS = (1, G2, G1)


def profile(compute: dict[int, float], load: dict[int, float], n_blocks: int = 3, context: int = 128,
            model: str = "m", version: int = 1) -> DeviceCostProfile:
    """Every block the same: ``compute[S]`` and ``load[S]`` ms (through the file format)."""
    return DeviceCostProfile.from_json({
        "format": "hexa-device-cost-profile/1", "device": "Test Phone", "chipset": "test-chip",
        "source": "made up for a test", "model": model, "graph_version": version, "context": context,
        "blocks": [[6 * b, 6 * b + 6] for b in range(n_blocks)],
        "graphs": [{"block": b, "S": S, "compute_ms": compute[S], "load_ms": load[S]}
                   for b in range(n_blocks) for S in compute]})


# A phone: a 64-token graph 10 ms a block, an 8-token one 2 ms (so a 64-token chunk as eight
# 8-token pieces costs 16 ms), a 1-token one 1.5 ms; loading a block's G2 family (S=1 and S=8)
# takes 20 + 25 = 45 ms, its G1 30 ms.
PHONE = profile({1: 1.5, 8: 2.0, 64: 10.0}, {1: 20.0, 8: 25.0, 64: 30.0})


@pytest.fixture
def fake_sessions(monkeypatch):
    """BlockGraphs with placeholder sessions: its planning and bookkeeping run for real, no QNN."""
    monkeypatch.setattr(blocks, "load_graph", lambda path, build: SimpleNamespace(load_ms=1.0))

    def make(cost_profile=None, n=3):
        keys = [(b, S) for b in range(n) for S in LENGTHS]
        return BlockGraphs({k: Path(f"/nonexistent/{k[0]}-{k[1]}") for k in keys}, {k: None for k in keys},
                           n, G1, (1, G2), progressive=True, cost_profile=cost_profile)
    return make


def test_the_planner_takes_the_device_times_and_switches_a_block_early(fake_sessions):
    g = fake_sessions(PHONE)
    for b in range(3):                     # the emulator's measurements, which the profile overrides
        g.note_run(b, G1, 10.0)
        g.note_run(b, G2, 8.0)
    c = g._costs()
    assert (c.load_ms, c.g1_ms, c.g2_ms) == ([45.0] * 3, [10.0] * 3, [16.0] * 3)
    # 4 chunks, 3 blocks; by hand (block j's G1 compute of chunk c ends at 30c + 10(j+1)):
    # [3,3,3] (all switch after their last chunk): requests at 100, 110, 120; the loader serves them
    #   100-145, 145-190, 190-235 -> ready 235, prefill 120.
    # one switch a chunk earlier:
    #   [2,3,3]: b0 loads 70-115; chunk 3: b0 on G2 from 115 -> 131, b1 141 (load 141-186), b2 151
    #            (186-231) -> ready 231
    #   [3,2,3]: b1 loads 80-125; chunk 3: b0 100 (its load 125-170), b1 waits -> 125+16 = 141, b2 151
    #            (170-215) -> ready 215   <- best
    #   [3,3,2]: b2 loads 90-135; chunk 3: b0 100, b1 110 (loads 135-180, 180-225), b2 135+16 = 151
    #            -> ready 225
    # from [3,2,3] (prefill 151, still a 64 ms stall):
    #   [2,2,3]: b0 70-115, b1 115-160; b0 115+16 = 131, b1 160+16 = 176, b2 186 (186-231) -> 231
    #   [3,1,3]: b1 50-95; chunk 2: b0 70, b1 95+16 = 111, b2 121; chunk 3: b0 131 (131-176), b1 147,
    #            b2 157 (176-221) -> 221
    #   [3,2,2]: b1 80-125, b2 125-170; b0 100 (170-215), b1 141, b2 170+16 = 186 -> 215: no better, stop
    switch, t = plan(4, c, early=True)
    assert switch == [3, 2, 3]
    assert (t.ready_ms, t.prefill_ms) == (215.0, 151.0)
    assert simulate(4, c, [3, 3, 3]).ready_ms == 235.0
    # with the emulator's own figures (an 8-token piece 8 ms: a chunk on G2 costs 64 ms, and loads
    # of 1 ms a graph) the same planner keeps every block on G1: nothing to gain from switching early
    emulator = fake_sessions(None)
    for b in range(3):
        emulator.note_run(b, G1, 10.0)
        emulator.note_run(b, G2, 8.0)
    assert emulator._costs().g2_ms == [64.0] * 3
    assert plan(4, emulator._costs(), early=True)[0] == [3, 3, 3]


def test_the_ledger_prices_each_graph_run_and_load_wait_on_the_device(fake_sessions):
    g = fake_sessions(PHONE)
    g.early = True
    g.note_run(0, 1, 999.0)                     # before: not part of the request below
    start = g.ledger.snapshot()

    # request 1: 4 chunks, planned [3,2,3] (previous test); the runs the runtime makes for it
    g.begin_prefill(4 * G1)
    assert g.switch_after == [3, 2, 3]
    for chunk in range(4):
        for b in range(3):
            if g.uses_g1(b):
                g.note_run(b, G1, 40.0)
            else:
                g.ensure_g2(b)
                for _ in range(G1 // G2):   # a 64-token chunk on the 8-token graph
                    g.note_run(b, G2, 30.0)
            g.after_chunk_block(b)
        g.end_chunk()
    g.end_prefill()
    for S in (1, 1, 8):                          # two plain steps, one 8-token verification
        for b in range(3):
            g.ensure_g2(b)
            g.note_run(b, S, {1: 20.0, 8: 30.0}[S])
    one = g.ledger.since(start)
    # runs: 11 on G1 (3 chunks x 3 blocks + 2), 8 pieces of block 1 on S=8, 3 x 3 decoding
    assert one.runs == 11 + 8 + 9
    assert one.graph_ms == pytest.approx(11 * 40 + 8 * 30 + 6 * 20 + 3 * 30)
    assert one.device_graph_ms == pytest.approx(11 * 10 + 8 * 2 + 6 * 1.5 + 3 * 2)        # 141
    # waits on the device timeline: block 1 waits 100 -> 125 during chunk 3 (25 ms), then the
    # first decoding step waits from the prefill's end (151) until every load is in (215): 64 ms
    assert one.device_stall_ms == pytest.approx(25 + 64)
    assert one.stall_ms >= 0                     # the placeholder loads' measured waits

    # request 2: every block is on G2 and reloads its G1 first (3 x 30 ms, blocking); one chunk,
    # switches after it (not early): loads 10-55, 55-100, 100-145 after a 30 ms prefill: 115 ms
    mid = g.ledger.snapshot()
    g.early = False
    g.begin_prefill(40)
    for b in range(3):
        g.note_run(b, G1, 40.0)
        g.after_chunk_block(b)
    g.end_chunk()
    g.end_prefill()
    assert g.ledger.since(mid).device_stall_ms == pytest.approx(90)      # the waits after it are pending
    for b in range(3):
        g.ensure_g2(b)
        g.note_run(b, 1, 20.0)
    two = g.ledger.since(mid)
    assert two.device_graph_ms == pytest.approx(3 * 10 + 3 * 1.5)
    assert two.device_stall_ms == pytest.approx(90 + 115)


def test_the_estimate_replaces_graph_time_and_load_waits_and_keeps_the_cpu_side():
    # a 2.0 s run: 1.2 s in emulated graphs, 0.1 s waiting for loads, so 0.7 s on the CPU; on the
    # device its graphs take 0.15 s and its waits 0.05 s: 0.7 + 0.15 + 0.05 = 0.9 s
    spent = GraphLedger(runs=40, graph_ms=1200.0, stall_ms=100.0, device_graph_ms=150.0, device_stall_ms=50.0)
    assert spent.estimate_ms(2000.0) == pytest.approx(900.0)
    figures = device_estimate(spent, 2.0)
    assert figures["estimated_device_seconds"] == pytest.approx(0.9)
    assert (figures["measured_graph_ms"], figures["estimated_device_graph_ms"]) == (1200.0, 150.0)
    later = GraphLedger(runs=50, graph_ms=1500.0, stall_ms=100.0, device_graph_ms=190.0, device_stall_ms=80.0)
    assert later.since(spent) == GraphLedger(10, 300.0, 0.0, 40.0, 30.0)


def _run(tokens, seconds, device_s=None) -> dict:
    r = {"tokens": tokens, "seconds": seconds, "ttft_s": 0.1, "steps": len(tokens) - 1,
         "accepted_per_step": 1.0, "prefill_ms": 80.0, "matches_reference": True}
    if device_s is not None:
        r["estimated_device_seconds"] = device_s
    return r


def test_the_bench_labels_the_device_time_an_estimate_and_names_the_profile():
    rows = [{"id": "a", "task": "qa", "prompt_tokens": 50, "results": {
        "vanilla": _run([1, 2, 3, 4], 4.0, 1.0), "hexa": _run([1, 2, 3, 4], 2.0, 0.4),
        "hf": _run([1, 2, 3, 4], 3.0)}}]              # a peer runs no device graphs: no estimate
    engine = SimpleNamespace(model_name="m", backend_name="qnn", threads=2, model=SimpleNamespace(kernel="k"),
                             cost_profile=PHONE)
    result = _with_device_note(summarize(rows, BenchOptions(["vanilla", "hexa", "hf"], 4), "vanilla", engine),
                               engine)
    van, hexa = (result["runs"][m]["tasks"]["all"] for m in ("vanilla", "hexa"))
    assert van["estimated_device_tokens_per_s"] == pytest.approx(4 / 1.0)
    assert hexa["estimated_device_speedup_vs_vanilla"] == pytest.approx((4 / 0.4) / 4.0)
    assert hexa["seconds"] == 2.0                                        # the measured time is kept
    assert "estimated_device_seconds" not in result["runs"]["hf"]["tasks"]["all"]
    note = result["device_estimate"]
    assert (note["device"], note["source"]) == ("Test Phone", "made up for a test")
    assert note["what"].startswith("estimated, not measured")
    table = format_table(result)
    assert "est. device s*" in table and "est. device tok/s*" in table and "est. speedup*" in table
    footnote = table.splitlines()[-1]
    assert footnote.startswith("* estimated, not measured") and "Test Phone (test-chip)" in footnote
    assert "made up for a test" in footnote
    device_rows = table.split("est. device s*")[1].splitlines()
    assert next(line for line in device_rows if line.startswith("all") and " hexa " in line).split()[2:] == \
        ["2.00", "0.40", "10.00", "2.50x"]
    # without a profile: no estimate anywhere
    plain = SimpleNamespace(**{**vars(engine), "cost_profile": None})
    for r in rows[0]["results"].values():
        r.pop("estimated_device_seconds", None)
    result = _with_device_note(summarize(rows, BenchOptions(["vanilla", "hexa"], 4), "vanilla", plain), plain)
    assert "device_estimate" not in result and "est. device" not in format_table(result)


def _graph_for(n: int) -> int:
    return 1 if n == 1 else G2


# what the CPU does around the graphs on the device too (embedding, inputs, output head): 3 ms for
# one token, 3.5 ms for an 8-token graph's rows
CPU_SIDE = CostModel({0: CostCurve([(1, 3.0)] + [(n, 3.5) for n in range(2, G2 + 1)])})


def test_the_device_staircase_is_the_profiles_graph_times_plus_the_cpu_side():
    m = device_cost_model(PHONE, 3, _graph_for, CPU_SIDE)
    assert m(1) == pytest.approx(3.0 + 3 * 1.5)
    assert m(2) == m(8) == pytest.approx(3.5 + 3 * 2.0)
    assert m.at(5000)(8) == m(8)                                         # static: no context term


def test_a_flat_device_curve_sizes_bigger_trees_than_the_emulators_steep_one():
    # a phone: 1- and 8-token graphs cost the same; the emulator: an 8-token pass 3x a 1-token one
    flat = device_cost_model(profile({1: 1.0, 8: 1.0, 64: 5.0}, {1: 1.0, 8: 1.0, 64: 1.0}), 3, _graph_for,
                             CPU_SIDE)
    steep = CostModel({0: CostCurve([(1, 30.0)] + [(n, 90.0) for n in range(2, G2 + 1)])})
    # "1 2" recurs with a different continuation each time: drafts exist but none is likely
    prompt, first = [1, 2, 3, 4, 1, 2, 5, 6, 1, 2, 7], 1
    sizes = {}
    for name, model in (("flat", flat), ("steep", steep)):
        cost = OnlineCost(model, learn=False)
        spec = DraftingSpeculator(method_spec("hexa"), [], cost, max_tree=G2 - 1, max_depth=G2 - 1,
                                  confidence=ConfidenceMap())
        spec.start(prompt, first, None)
        sizes[name] = spec.propose().n
    assert sizes["flat"] > sizes["steep"]
    assert sizes["flat"] == G2 - 1                # a flat curve fills the 8-token graph


def test_a_device_profile_is_not_pulled_towards_this_machines_times():
    m = device_cost_model(PHONE, 3, _graph_for, CPU_SIDE)
    cost = OnlineCost(m, learn=False)
    for _ in range(20):
        cost.observe(8, 100, 500.0)               # the emulator: far slower than the phone
    assert cost.at(100)(8) == pytest.approx(m(8))
    learning = OnlineCost(m)
    learning.observe(8, 100, 500.0)
    assert learning.at(100)(8) > m(8)


# ---- on the real qnn backend (the HTP emulator)

PROMPT = ("Summarize: The cat sat on the mat. The cat sat on the mat because the mat was warm. "
          "The warm mat made the cat happy.")


@pytest.mark.slow
def test_a_qnn_engine_plans_sizes_and_estimates_with_the_profile(engine, tmp_path):
    pytest.importorskip("onnxruntime_qnn")
    from engine import Engine
    from engine.bench.methods import EngineMethod
    from engine.runtime.qnn.graphs import GRAPH_VERSION
    from engine.runtime.qnn.runtime import BLOCK_LAYERS

    from engine.model.cache import entry_dir
    layers = engine.model.config.num_layers
    n_blocks = -(-layers // BLOCK_LAYERS)
    qnn_model = entry_dir(engine.source, engine.cache_dir / "models").name   # qnn's graphs: the fp32 conversion
    flat = profile({1: 0.2, 8: 0.2, 64: 1.0}, {1: 5.0, 8: 5.0, 64: 8.0}, n_blocks, context=192,
                   model=qnn_model, version=GRAPH_VERSION)
    assert flat.blocks == tuple((a, min(a + BLOCK_LAYERS, layers)) for a in range(0, layers, BLOCK_LAYERS))
    path = tmp_path / "phone.cost.json"
    flat.save(path)

    other = tmp_path / "other.cost.json"
    profile({1: 0.2, 8: 0.2, 64: 1.0}, {1: 5.0, 8: 5.0, 64: 8.0}, n_blocks, context=256,
            model=qnn_model, version=GRAPH_VERSION).save(other)
    with pytest.raises(EngineError, match="made for other graphs: context 256 \\(engine: 192\\)") as err:
        Engine.load(None, cache_dir=engine.cache_dir, backend="qnn", context_window=192, cost_profile=str(other))
    assert "\n" not in str(err.value)

    e = Engine.load(None, cache_dir=engine.cache_dir, backend="qnn", context_window=192, cost_profile=str(path))
    assert e.cost_profile == flat and e.model.graphs.device is e.model.cost_profile
    assert e.model.graphs._costs().g2_ms == [0.2 * 64 / 8] * n_blocks
    curve = e.cost_curve()
    cpu_side = curve(1) - n_blocks * 0.2
    assert 0 < cpu_side and curve(8) - curve(2) == 0          # the device's staircase: flat over 2..8

    # 6 tokens: each emulated graph run takes ~0.75 s (12 took 62 of the test's 70 s); losslessness
    # over more tokens is test_qnn's
    runs = {m: EngineMethod(e, m).run(e.chat_ids([{"role": "user", "content": PROMPT}]), 6, [])
            for m in ("vanilla", "hexa")}
    assert runs["hexa"].tokens == runs["vanilla"].tokens
    assert runs["hexa"].steps < runs["vanilla"].steps          # the flat device curve drafts
    assert e._online_cost.ratio == [1.0] * len(e._online_cost.ratio)   # emulator times not learnt
    van = runs["vanilla"]
    x = van.extra
    prompt_len = len(e.chat_ids([{"role": "user", "content": PROMPT}]))
    # vanilla: every 64-token prompt chunk through each block's G1, then one 1-token pass per step
    assert x["graph_runs"] == n_blocks * (-(-prompt_len // 64) + van.steps)
    assert x["estimated_device_graph_ms"] == pytest.approx(n_blocks * (-(-prompt_len // 64) * 1.0 + van.steps * 0.2))
    assert x["estimated_device_seconds"] == pytest.approx(
        van.seconds - (x["measured_graph_ms"] + x["measured_load_wait_ms"]
                       - x["estimated_device_graph_ms"] - x["estimated_device_load_wait_ms"]) / 1000)
    assert x["estimated_device_seconds"] < van.seconds          # the emulator is slower than this "phone"
