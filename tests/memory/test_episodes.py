"""Trajectory memory: episodes stored as agent sessions, found again by task similarity."""
from __future__ import annotations

import json

import pytest

from memory.errors import StoreError


def _episode(mem, task, actions, outcome="done", success=None):
    ep = mem.episodes.start(task, "127.0.0.1:5555", model="m")
    for i, action in enumerate(actions):
        mem.episodes.add_step(ep.session_id, {"screen": f"screen {i}", "app": "com.android.settings"},
                              action, token_ids=[i + 1, i + 2])
    mem.episodes.finish(ep.session_id, outcome, success)
    return ep.session_id


def test_an_episode_is_a_session_with_its_trajectory(mem):
    sid = _episode(mem, "Turn off  Bluetooth.", ["tap(2)", "tap(1)", 'done("off")'], success=True)
    ep = mem.episodes.get(sid)
    assert (ep.task, ep.outcome, ep.success) == ("Turn off Bluetooth.", "done", True)
    assert [s["action"] for s in ep.steps] == ["tap(2)", "tap(1)", 'done("off")']
    assert ep.steps[0]["screen"] == "screen 0"
    msgs = mem.messages(sid)
    assert [(m.role, m.text) for m in msgs][:2] == [("user", "Turn off Bluetooth."), ("assistant", "tap(2)")]
    assert msgs[1].token_ids == [1, 2] and msgs[1].mode == "agent"
    assert mem.get_session(sid).mode == "agent"


def test_similar_tasks_are_found_and_failures_left_out(mem):
    good = _episode(mem, "Turn off Bluetooth.", ["tap(2)", 'done("ok")'], success=True)
    _episode(mem, "Turn off Bluetooth.", ["tap(5)"], outcome="step_limit")
    _episode(mem, "Turn off Bluetooth.", ["tap(3)", 'done("ok")'], success=False)
    _episode(mem, "Set a timer for 5 seconds.", ["tap(1)", 'done("ok")'], success=True)
    found = mem.episodes.similar("Turn off Bluetooth.", k=3)
    assert [e.session_id for _, e in found] == [good]
    assert found[0][0] > 0.99
    every = mem.episodes.similar("Turn off Bluetooth.", k=5, usable_only=False)
    assert len(every) == 3


def test_agent_tasks_stay_out_of_chat_context(mem):
    _episode(mem, "Turn off Bluetooth.", ["tap(2)"])
    s = mem.new_session("assistant", "chat")
    mem.add_message(s.id, "user", "How do I turn off Bluetooth?")
    items = mem.context_for("Turn off Bluetooth.", k=4)
    assert all("tap(2)" not in it.text for it in items)


def test_export_and_deletion(mem):
    sid = _episode(mem, "Enable Wi-Fi.", ["tap(1)"])
    lines = mem.episodes.export_jsonl().splitlines()
    assert json.loads(lines[0])["task"] == "Enable Wi-Fi."
    mem.delete_session(sid)
    assert mem.episodes.get(sid) is None
    _episode(mem, "Enable Wi-Fi.", ["tap(1)"])
    mem.wipe()
    assert mem.episodes.list() == []


def test_bad_input(mem):
    with pytest.raises(StoreError):
        mem.episodes.start("   ", "d")
    with pytest.raises(StoreError):
        mem.episodes.finish(999, "done")
    with pytest.raises(ValueError):
        mem.episodes.finish(_episode(mem, "x", []), "won")
