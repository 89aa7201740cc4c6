"""Whole UI-agent episodes over a real TCP adb connection to the virtual phone: with the embedded
model choosing among the planner's steps (speculative, and the same choices as plain decoding),
with a phone that goes away, and through the confirmation gate. The agent gets its options from
its caller (``AgentOptions``), never the settings; the phone is reset by the harness' PhoneControl,
never by the agent."""
from __future__ import annotations

import pytest

from agents.events import Acted, EpisodeEnd, Observed
from agents.harness.control import PhoneControl
from agents.ui.agent import UIAgent
from agents.ui.explore import Explorer
from agents.ui.knowledge import Knowledge
from agents.ui.options import AgentOptions
from engine.events import Done
from support.fakes import FakeEngine


def run(agent, task, **kw):
    events = list(agent.run(task, **kw))
    return events, events[-1]


def test_an_episode_with_the_embedded_model(engine, device, phone_server, tmp_path, hash_embedder):
    from memory import Memory

    phone = phone_server[0]
    control = PhoneControl(device.conn)
    with Memory.open(tmp_path / "data", tokenizer=engine.encode, embedder=hash_embedder) as memory:
        Explorer(device, Knowledge(memory.ui_graphs), budget=80).explore(device.apps["Settings"])
        explored = memory.ui_graphs.apps()
        graph = memory.ui_graphs.load(device.apps["Settings"])    # as explored (an episode adds to it)
        control.reset()
        agent = UIAgent(engine, memory, device, AgentOptions(method="hexa", max_steps=6))
        events, end = run(agent, "Turn off Bluetooth.")
        acted = [e for e in events if isinstance(e, Acted)]
        # it ran to an end of its own (no error, no lost phone, no refusal); no oracle judges success
        assert isinstance(end, EpisodeEnd) and end.outcome in ("done", "step_limit", "loop") and end.success is None
        assert (end.outcome == "done") == acted[-1].action.startswith("done(")
        assert acted and all(not e.error for e in acted)
        assert len([e for e in events if isinstance(e, Observed)]) >= len(acted) - 1
        for done in (e for e in events if isinstance(e, Done)):
            assert done.text.strip() in ("A", "B", "C", "D")          # the model only chooses a letter
        visited = phone.state()["visited"]
        assert visited[0] == "launcher:home" and len(visited) > 1      # its actions moved the phone's screens
        episode = memory.episodes.get(end.session_id)
        assert [s["action"] for s in episode.steps] == [a.action for a in acted]
        assert episode.outcome == end.outcome and episode.task == "Turn off Bluetooth."
    # the same episode with plain decoding chooses the same steps (lossless, constrained), from
    # the same knowledge on a fresh memory
    with Memory.open(tmp_path / "fresh", tokenizer=engine.encode, embedder=hash_embedder) as fresh:
        for sid, screen in sorted(graph["screens"].items()):
            assert fresh.ui_graphs.put_screen(device.apps["Settings"], screen) == sid
        for eid, edge in sorted(graph["edges"].items()):
            assert fresh.ui_graphs.put_edge(device.apps["Settings"], edge["src"], edge) == eid
        fresh.ui_graphs.put_app(device.apps["Settings"], graph["home"], graph["info"])
        assert fresh.ui_graphs.apps() == explored
        control.reset()
        plain = UIAgent(engine, fresh, device, AgentOptions(method="vanilla", max_steps=6))
        events2, _ = run(plain, "Turn off Bluetooth.")
        assert [e.action for e in events2 if isinstance(e, Acted)] == [a.action for a in acted]


def scripted(letter: str = "A") -> FakeEngine:
    """Answers the model's letter (the gate and the phone are under test, not the choice); held to
    the engine's signature (tests/test_fakes.py)."""
    return FakeEngine(letter)


@pytest.fixture
def memory(tmp_path, hash_embedder):
    from memory import Memory

    with Memory.open(tmp_path / "mem", embedder=hash_embedder) as mem:
        yield mem


def test_the_phone_going_away_ends_the_episode_and_keeps_the_steps(device, phone_server, memory):
    phone, server, _ = phone_server
    agent = UIAgent(scripted(), memory, device, AgentOptions(max_steps=5))
    first = None
    for ev in agent.run("Turn off Bluetooth."):
        if isinstance(ev, Acted) and first is None:
            first = ev
            server.stop()                       # the phone is unplugged after the first action
    end = ev
    assert isinstance(end, EpisodeEnd) and end.outcome == "disconnected"
    assert "stopped answering" in end.message or "cannot connect" in end.message
    assert [s["action"] for s in memory.episodes.get(end.session_id).steps] == [first.action]


def test_sensitive_actions_wait_for_the_user(device, phone_server, memory):
    phone = phone_server[0]
    asked = []
    setup = {"clock": {"alarms": [{"hour": 3, "minute": 0, "ampm": "PM", "label": "meeting", "days": [],
                                    "on": True, "vibrate": True, "sound": "Default"}], "expanded_alarm": 0}}
    control = PhoneControl(device.conn)
    for answer in (False, True):
        control.reset(setup)
        device.launch(device.apps["Clock"])
        assert "Delete" in [e.label for e in device.observe().elements]
        agent = UIAgent(scripted(), memory, device, AgentOptions(policy="planner", max_steps=6),
                        confirm=lambda q, a=answer: asked.append(q) or a)
        events, end = run(agent, "Delete the alarm")
        assert len(asked) == 1 + answer and "Delete" in asked[-1]
        alarms = phone.state()["clock"]["alarms"]
        if answer:
            assert alarms == [] and end.outcome != "refused"
            assert any(e.element == "Delete" for e in events if isinstance(e, Acted))
        else:      # refused before acting: the alarm is still there, nothing was tapped on Delete
            assert len(alarms) == 1 and end.outcome == "refused" and end.message.startswith("Not allowed: ")
            assert not any(e.element == "Delete" for e in events if isinstance(e, Acted))
