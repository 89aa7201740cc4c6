"""``hexa agent explore``, ``hexa agent "task"`` and ``hexa phone state|reset`` against the virtual
phone over real TCP adb (a PhoneServer in this process, on a free port), and against a phone that
is not the virtual one (the same server without the virtual phone's ``hexa-phone`` command: what
a real phone answers). Each command runs as ``hexa`` does, through ``app.cli.main``."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli_phone import graphs, home, one_line, phone, run, serve  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]


def test_explore_stores_the_graphs_lists_and_forgets_them(home, phone, capsys):
    _, address = phone
    code, out, err = run(capsys, "agent", "explore", "--device", address, "--app", "clock", "--app",
                         "com.android.settings", "--budget", "12")
    assert code == 0, err
    summaries = out.strip().splitlines()
    assert [s.split(":")[0] for s in summaries] == ["com.google.android.deskclock", "com.android.settings"]
    assert all(re.search(r": \d+ screens, \d+ edges \(.*\), \d+ actions, [\d.]+ min, ", s) for s in summaries)
    assert "exploring Clock (1/2): " in err and "exploring Settings (2/2): " in err     # live progress
    kept = graphs(home)
    assert set(kept) == {"com.google.android.deskclock", "com.android.settings"}
    assert all(r["screens"] > 0 and r["info"]["actions"] >= 12 for r in kept.values())
    assert phone[0].state()["foreground"]["package"] == "com.google.android.apps.nexuslauncher"  # left home

    code, out, _ = run(capsys, "agent", "explore", "--list")            # no phone needed
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.strip().splitlines()[1:]}
    assert set(rows) == {"Clock", "Settings"}
    assert rows["Clock"][2:5] == [str(kept["com.google.android.deskclock"][k]) for k in ("screens", "edges")] + \
        [str(kept["com.google.android.deskclock"]["info"]["actions"])]

    # again: it goes on where it stopped (more actions spent, the graph only grows)
    code, out, err = run(capsys, "agent", "explore", "--device", address, "--app", "Settings", "--budget", "12")
    assert code == 0, err
    again = graphs(home)["com.android.settings"]
    assert again["info"]["actions"] > kept["com.android.settings"]["info"]["actions"]
    assert again["screens"] >= kept["com.android.settings"]["screens"]

    code, _, err = run(capsys, "agent", "explore", "--forget", "clock")
    assert code == 0 and "forgot com.google.android.deskclock" in err
    assert set(graphs(home)) == {"com.android.settings"}
    line = one_line(*run(capsys, "agent", "explore", "--forget", "Clock")[::2])
    assert line == "hexa: no graph kept for 'Clock' (apps explored: Settings (com.android.settings))"


def test_explore_errors_are_one_line(home, phone, capsys, tmp_path):
    _, address = phone
    line = one_line(*run(capsys, "agent", "explore", "--device", address, "--app", "Sheets")[::2])
    assert line.startswith("hexa: unknown app 'Sheets' (this phone's apps: Settings, Clock, Contacts, Messages")
    line = one_line(*run(capsys, "agent", "explore", "--device", address, "--budget", "0")[::2])
    assert line == "hexa: --budget 0: expected at least 1 action per app"
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    line = one_line(*run(capsys, "agent", "explore", "--device", f"127.0.0.1:{closed}")[::2])
    assert f"cannot connect to 127.0.0.1:{closed}" in line
    assert graphs(home) == {}
    code, out, _ = run(capsys, "agent", "explore", "--list")
    assert code == 0 and out.startswith("no app explored yet")


def test_ctrl_c_stops_an_exploration_and_keeps_what_it_learned(home, phone):
    """A real process and a real SIGINT: the action under way finishes, the summary says it
    stopped, the graph is kept with the actions spent, the exit status is 130."""
    _, address = phone
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "agent", "explore", "--device", address,
                             "--app", "Contacts", "--budget", "1000"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            # as from a terminal: a runner started in the background (`make test &`)
                            # ignores SIGINT, and a child would inherit that and never see Ctrl-C
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        first = ""
        while "exploring Contacts (1/1)" not in first and time.monotonic() < deadline:
            first += proc.stderr.readline()
        assert "exploring Contacts (1/1): " in first, first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "stopping after this action" in err and "Traceback" not in err
    assert re.match(r"com\.google\.android\.contacts: \d+ screens, .* — stopped \(run it again to go on\)", out), out
    kept = graphs(home)["com.google.android.contacts"]
    actions = int(re.search(r", (\d+) actions, ", out)[1])
    assert kept["screens"] > 0 and kept["info"]["actions"] == actions > 0 and not kept["info"]["complete"]


def test_agent_parses_a_task_and_explore_alike():
    from app.cli import build_parser

    p = build_parser()
    args = p.parse_args(["agent", "--yes", "Turn", "off", "Bluetooth", "--max-steps", "3"])
    assert (args.func.__name__, args.task, args.yes, args.setting_agent_steps) == ("cmd_agent", ["Turn", "off", "Bluetooth"], True, "3")
    args = p.parse_args(["agent", "explore the settings"])                 # a task, not the subcommand
    assert args.func.__name__ == "cmd_agent" and args.task == ["explore the settings"]
    args = p.parse_args(["agent", "explore", "--app", "Clock", "--budget", "5"])
    assert (args.func.__name__, args.app, args.budget) == ("cmd_explore", ["Clock"], 5)
    args = p.parse_args(["agent", "--export", "-"])
    assert args.func.__name__ == "cmd_agent" and str(args.export) == "-" and args.task == []


def test_agent_options_come_from_the_settings_and_the_phone():
    from app.phone_agent import REAL_PHONE_SETTLE_S, agent_options
    from app.settings import Settings

    s = Settings(agent_steps=7, agent_elements=12, method="vanilla", history_drafting=False)
    real = agent_options(s, virtual=False)
    assert (real.max_steps, real.elements, real.method, real.history_drafting, real.settle_s) == \
        (7, 12, "vanilla", False, REAL_PHONE_SETTLE_S)
    assert (real.policy, real.verify, real.recall) == ("planner", True, True)
    assert agent_options(Settings(agent_policy="model"), virtual=False).policy == "model"
    virtual = agent_options(s, virtual=True, policy="top", verify=False)
    assert (virtual.settle_s, virtual.policy, virtual.verify, virtual.max_steps) == (0.0, "top", False, 7)


def test_phone_state_and_reset_through_the_harness(home, phone, capsys):
    vphone, address = phone
    fresh = vphone.state()
    code, _, err = run(capsys, "agent", "explore", "--device", address, "--app", "Settings", "--budget", "3")
    assert code == 0, err
    code, out, _ = run(capsys, "phone", "state", "--device", address)
    assert code == 0 and json.loads(out) == vphone.state() != fresh     # Settings was visited
    code, _, err = run(capsys, "phone", "reset", "--device", address)
    assert code == 0 and f"{address} reset" in err
    assert vphone.state() == fresh


def test_phone_state_on_a_phone_that_is_not_virtual(home, tmp_path, capsys):
    _, server, address = serve(tmp_path, real=True)
    try:
        for action in ("state", "reset"):
            line = one_line(*run(capsys, "phone", action, "--device", address)[::2])
            assert line.startswith(f"hexa: {address} is not hexa's virtual phone: `hexa-phone {action}` answered ")
            assert "not found" in line
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_agent_runs_a_task_before_and_after_exploring(home, phone, capsys):
    """The real agent on the embedded model: without a graph it says so and still runs; after
    `hexa agent explore` it does not; each step prints the screen, the candidates and the action,
    the model's figures when it was asked; the end line's outcome decides the exit status."""
    vphone, address = phone

    def episode(task: str) -> tuple[int, str, str]:
        code, out, err = run(capsys, "agent", "--device", address, "--yes", "--max-steps", "8", task)
        assert "Traceback" not in err
        end = re.search(r"^episode (\d+): (\w+) after (\d+) step\(s\)", out, re.M)
        assert end, out
        assert code == (0 if end[2] == "done" else 1)
        assert re.search(r"^step 1  com\.google\.android\.apps\.nexuslauncher", out, re.M)
        for line in out.splitlines():
            if "[model:" in line:
                assert re.search(r"\[model: \d+ tok, [\d.]+ accepted/step, \d+ ms/tok, TTFT \d+ ms\]$", line)
        assert len(re.findall(r"^  -> ", out, re.M)) >= 1
        return code, out, err

    _, _, err = episode("Turn on airplane mode")
    assert "no app explored yet: run `hexa agent explore` first" in err and "the virtual phone" in err
    code, _, err = run(capsys, "agent", "explore", "--device", address, "--app", "Settings", "--budget", "120")
    assert code == 0, err
    assert vphone.state()["foreground"]["package"] == "com.google.android.apps.nexuslauncher"
    _, _, err = episode("Turn on airplane mode")
    assert "no app explored yet" not in err
