"""``hexa bench --route`` (simulated) end to end: the table, its provenance, the budget kept."""
from __future__ import annotations

import json

import pytest

from app.cli import main
from app.locations import locations
from engine.routing.models import DeviceModel, RoutingState, load_state, save_state

pytestmark = pytest.mark.slow


def test_bench_route_prints_every_policy_and_what_was_replayed(tmp_path, capsys, engine):
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps({"id": str(i), "task": "t", "turns": ["word " * n]})
                              for i, n in enumerate(range(5, 800, 20))))
    state = locations().data / "routing.json"
    save_state(state, RoutingState(DeviceModel(0.004, 0.05, 60.0, "kept for the test")))
    assert main(["bench", "--route", "--data", str(data), "--budget", "0.3", "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    for policy in ("device", "server", "random-dc", "disco-dc", "disco-dc+mig", "random-sc", "disco-sc"):
        assert f" {policy} " in out
    assert "prompt lengths: real" in out and "server TTFT: replayed" in out and "kept for the test" in out
    rows = json.loads((tmp_path / "r.json").read_text())
    assert all(abs(r["budget"] - 0.3) <= 0.03 for r in rows if r["b"] == 0.3)
    assert load_state(state).device.source == "kept for the test"   # not measured again


def test_bench_route_refuses_a_bad_budget(tmp_path, capsys):
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "1", "task": "t", "turns": ["hi"]}))
    assert main(["bench", "--route", "--data", str(data), "--budget", "1.5"]) == 2
    assert "--budget 1.5" in capsys.readouterr().err
