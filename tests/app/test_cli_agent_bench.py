"""``hexa agent-bench`` on the harness, over real TCP adb to the virtual phone (a PhoneServer in this
process). The fast test puts an agent double in the agent's place: it records everything it is
given (so the test sees that the harness' checks never reach it) and acts on the phone through the
real Device, so a run's success can only come from the phone's state. The slow test runs the real
UIAgent on the embedded model over a small ladder, with a spy that reads the agent's memory after
every episode for any trace of a check."""
from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from agents.events import Acted, EpisodeEnd, Observed
from agents.harness.task_eval import load_task_files
from agents.ui.screen import Element
from support.cli_phone import graphs, home, one_line, phone, run, serve  # noqa: F401  (fixtures)
from engine.events import Done

CLOCK = "com.google.android.deskclock"


def check_words(tasks) -> set[str]:
    """Each check's state paths (a comparison's first operand: "settings.bluetooth", "item.hour")
    and the whole check of each task: what must never reach the agent. (Its values may: "London"
    or Clock's package are on the phone's screens too.)"""
    out: set[str] = set()

    def walk(x) -> None:
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            path = bool(x) and isinstance(x[0], str) and re.fullmatch(r"[a-z_]+(\.[\w.]+)+", x[0])
            if path:
                out.add(x[0])
            for v in x[1:] if path else x:
                walk(v)
    for t in tasks:
        walk(t.check)
        out.add(json.dumps(t.check))
    return out


class RecordingAgent:
    """In the agent's place: records what it is given; opens Clock when the task says Clock (the
    harness then judges clock-01 a success on the phone's state), taps a sensitive element without
    asking on "Bluetooth" tasks and after asking on the others, has one action refused, and asks a
    stand-in model once."""
    made: list["RecordingAgent"] = []

    def __init__(self, engine, memory, device, options, confirm=None):
        self.engine, self.memory, self.device, self.options, self.confirm = engine, memory, device, options, confirm
        self.tasks: list[tuple] = []
        self.graphs_at_start = [r["package"] for r in memory.ui_graphs.apps()]
        self.episodes_at_start = len(memory.episodes.list())
        RecordingAgent.made.append(self)

    def run(self, task, cancel=None):
        self.tasks.append((task, cancel))
        sid = self.memory.episodes.start(task, self.device.address).session_id
        screen = self.device.observe()
        delete = Element(text="Delete", rid="delete", cls="Button", bounds=(0, 0, 10, 10), clickable=True)
        yield Observed(1, screen, (delete,))
        if "Bluetooth" not in task:
            self.confirm("Allow tap \"Delete\" (delete)?")
        yield Done("eos", "A", (65,), 40, 1, ttft_ms=20.0, prefill_ms=10.0, prefill_tok_s=4000.0, decode_ms=8.0,
                   decode_tok_s=125.0, ms_per_token=8.0, steps=1, mean_accepted=2.0)
        yield Acted(1, "tap(1)", "Delete", "input tap 5 5")
        yield Observed(2, screen, ())
        if "Clock" in task:
            self.device.launch(CLOCK)
            yield Acted(2, 'open_app("Clock")', "Clock", "monkey -p ...")
        else:
            yield Acted(2, "back()", error="the phone answered 'Error: nope'")
        self.memory.episodes.finish(sid, "step_limit")
        yield EpisodeEnd(sid, "step_limit", 2, "Step limit (2) reached.")


@pytest.fixture
def recording(monkeypatch):
    import agents.ui.agent
    import app.loading

    class Engine:                       # the double never asks it; the memory counts with it
        model_name = "stand-in"

        def encode(self, text):
            return list(text.encode())

    RecordingAgent.made = []
    monkeypatch.setattr(agents.ui.agent, "UIAgent", RecordingAgent)
    monkeypatch.setattr(app.loading, "load_engine", lambda settings, locs, progress=None: Engine())
    return RecordingAgent.made


def test_the_bench_explores_once_runs_each_rung_on_its_own_copy_and_keeps_checks_from_the_agent(
        home, phone, capsys, recording, tmp_path):
    vphone, address = phone
    out_json = tmp_path / "runs.json"
    code, out, err = run(capsys, "agent-bench", "--device", address, "--ids", "clock-01,settings-01",
                         "--variants", "1", "--apps", "clock", "--ladder", "--rungs", "top,planner+verify,repeats",
                         "--explore-budget", "6", "--json", str(out_json))
    assert code == 0, err
    data = json.loads(out_json.read_text())
    # exploration: once, every app the tasks involve, before any run; its cost is reported
    assert [(r["app"], r["package"]) for r in data["exploration"]] == [("Clock", CLOCK)]
    assert data["exploration"][0]["actions"] >= 6 and data["exploration"][0]["screens"] > 0
    assert "| explored | actions | screens | edges | minutes | state |" in out and "| Clock | " in out
    # the tasks: clock-01 (shipped: settings-01 is not a clock task), then one drawn clock variant
    runs = data["runs"]
    assert [r["name"] for r in data["rungs"]] == ["top", "planner+verify", "repeats"]
    assert [(r["rung"], r["attempt"], r["kind"]) for r in runs] == [
        ("top", 1, "shipped"), ("top", 1, "variant"), ("planner+verify", 1, "shipped"),
        ("planner+verify", 1, "variant"), ("repeats", 1, "shipped"), ("repeats", 1, "variant"),
        ("repeats", 2, "shipped"), ("repeats", 2, "variant")]
    assert {r["task"] for r in runs if r["kind"] == "shipped"} == {"clock-01"}
    variant = next(r for r in runs if r["kind"] == "variant")
    assert re.fullmatch(r"clock\.\w+@0\.0", variant["task"]) and variant["app"] == "clock"
    assert set(runs[0]) == {"rung", "attempt", "app", "task", "kind", "instruction", "success", "outcome",
                            "steps", "invalid", "sensitive", "confirms", "unconfirmed", "model_asked",
                            "accepted_per_step", "ms_per_token", "seconds", "actions", "message"}
    # success is the harness' check on the phone's state: Clock in front passes clock-01, and the
    # drawn variant (possible, not yet done) is not done by opening an app
    for r in runs:
        opens = "Clock" in r["instruction"]
        assert r["success"] is (r["task"] == "clock-01")
        assert (r["outcome"], r["steps"], r["invalid"], r["model_asked"]) == ("step_limit", 2, 0 if opens else 1, 1)
        assert (r["sensitive"], r["confirms"], r["unconfirmed"]) == (1, 1, 0)       # asked before tapping
        assert (r["accepted_per_step"], r["ms_per_token"]) == (1.0, 8.0)
    invalid = sum(r["invalid"] for r in runs if r["rung"] == "repeats")
    assert re.search(rf"\| repeats \| all \| 50% \(1/2\) \| 50% \(1/2\) \| 2\.0 \| {invalid} \| 0 \| 4 \| 1\.00 \| 8\.00 \|", out), out
    assert "| top | clock | 50% (1/2) | – | 2.0 |" in out
    # the agent was given the task's words and nothing else
    words = check_words([t for t in load_task_files() if t.id == "clock-01"])
    assert len(recording) == 8
    for agent in recording:
        (task, cancel), = agent.tasks
        assert task in {r["instruction"] for r in runs} and cancel is None
        given = repr((task, agent.options, agent.engine.__dict__, agent.confirm.__self__.__dict__))
        assert not any(w in given for w in words), given
        assert agent.options.settle_s == 0.0 and agent.options.max_steps == 15
    # each rung ran on its own copy of the explored memory: the graph there, no other rung's episodes
    folders = {agent.memory.data_dir for agent in recording}
    assert len(folders) == 3 and all(agent.graphs_at_start == [CLOCK] for agent in recording)
    assert [a.episodes_at_start for a in recording] == [0, 1, 0, 1, 0, 1, 2, 3]
    assert [a.options.policy for a in recording[::2]] == ["top", "planner", "planner", "planner"]
    assert not any(Path(f).exists() for f in folders)                          # temporary, removed
    assert graphs(home) == {}                                                  # not the user's memory
    assert vphone.state()["foreground"]["package"] == "com.google.android.apps.nexuslauncher"   # torn down


def test_the_bench_counts_sensitive_actions_taken_without_asking(home, phone, capsys, recording, tmp_path):
    _, address = phone
    out_json = tmp_path / "runs.json"
    code, out, err = run(capsys, "agent-bench", "--device", address, "--ids", "settings-01", "--policy", "top",
                         "--no-verify", "--explore-budget", "0", "--json", str(out_json), "--memory")
    assert code == 0, err
    [r] = json.loads(out_json.read_text())["runs"]
    assert (r["rung"], r["sensitive"], r["confirms"], r["unconfirmed"], r["success"]) == ("top+recall", 1, 0, 1, False)
    assert "| top+recall | settings | 0% (0/1) | – | 2.0 | 1 | 1 | 1 |" in out
    assert json.loads(out_json.read_text())["exploration"] == [] and graphs(home) == {}
    [agent] = recording
    assert (agent.options.policy, agent.options.verify, agent.options.recall) == ("top", False, True)
    assert agent.memory.data_dir == home / "data"                                   # --memory: the user's


def test_bench_errors_are_one_line(home, phone, capsys, tmp_path):
    _, address = phone
    for argv, words in (
            (["--ladder", "--policy", "top"], "--ladder runs every configuration"),
            (["--rungs", "top"], "--rungs goes with --ladder"),
            (["--ladder", "--rungs", "top,best"], "unknown rung 'best'"),
            (["--only-variants"], "--only-variants needs --variants K"),
            (["--repeat", "0"], "--repeat 0: expected at least 1"),
            (["--ids", "clock-99"], "no task 'clock-99'"),
            (["--variants", "1", "--apps", "chrome"], "no templates for chrome")):
        line = one_line(*run(capsys, "agent-bench", "--device", address, *argv)[::2])
        assert words in line, line
    _, server, real = serve(tmp_path, real=True)
    try:
        line = one_line(*run(capsys, "agent-bench", "--device", real, "--ids", "clock-01")[::2])
        assert line == f"hexa: {real} is not hexa's virtual phone: agent-bench judges tasks on the phone's " \
                       f"state (start one with `hexa phone serve`)"
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_small_ladder_with_the_real_agent_and_model(home, phone, capsys, tmp_path, monkeypatch):
    """Two shipped tasks and one drawn variant, explored for real, on three rungs: the JSON's
    shape, a success judged on the phone, and no check in what the real agent was given or wrote."""
    import agents.ui.agent
    from agents.ui.agent import UIAgent

    tasks = {t.id: t for t in load_task_files()}
    words = check_words(tasks.values())
    seen: list[tuple] = []

    class Spy(UIAgent):
        def __init__(self, engine, memory, device, options, confirm=None):
            super().__init__(engine, memory, device, options, confirm=confirm)
            self.given = repr((options, confirm))

        def run(self, task, cancel: threading.Event | None = None):
            yield from super().run(task, cancel)
            db = b"".join(p.read_bytes() for p in Path(self.memory.root).glob("hexa.db*"))
            seen.append((task, self.given, [w for w in words if w.encode() in db]))

    monkeypatch.setattr(agents.ui.agent, "UIAgent", Spy)
    out_json = tmp_path / "runs.json"
    code, out, err = run(capsys, "agent-bench", "--device", phone[1], "--ids", "clock-01,settings-01",
                         "--variants", "1", "--limit", "3", "--ladder", "--rungs", "top,model+verify,repeats",
                         "--explore-budget", "150", "--json", str(out_json))
    assert code == 0, err
    data = json.loads(out_json.read_text())
    assert {r["app"] for r in data["exploration"]} == {"Settings", "Clock"}
    runs = data["runs"]
    assert len(runs) == 3 + 3 + 6 and [r["kind"] for r in runs[:3]] == ["shipped", "shipped", "variant"]
    assert all(isinstance(r["success"], bool) and r["outcome"] for r in runs)
    assert any(r["success"] for r in runs if r["task"] == "clock-01")       # opening Clock is within reach
    assert all(r["model_asked"] == 0 and r["accepted_per_step"] is None for r in runs if r["rung"] == "top")
    for r in runs:
        if r["model_asked"]:
            assert r["accepted_per_step"] >= 1.0 and r["ms_per_token"] > 0
    assert all(r["unconfirmed"] == 0 for r in runs if r["rung"] != "top")  # the agent's gate held
    assert len(seen) == len(runs)
    for task, given, leaked in seen:
        assert not leaked, (task, leaked)
        assert not any(w in given for w in words)
    for rung in ("top", "model+verify", "repeats"):
        assert f"| {rung} | all | " in out
