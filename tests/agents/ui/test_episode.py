"""Whole UI-agent episodes over a real TCP adb connection to the virtual phone: with the embedded
model (constrained, speculative), with a phone that goes away, and through the confirmation gate."""
from __future__ import annotations

import pytest

from agents.events import Acted, EpisodeEnd, Observed
from agents.ui.actions import parse
from agents.ui.agent import UIAgent
from app.settings import Settings
from engine.events import Done


def run(agent, task, **kw):
    events = list(agent.run(task, **kw))
    return events, events[-1]


def test_an_episode_with_the_embedded_model(engine, device, phone_server, tmp_path, hash_embedder):
    from memory import Memory

    phone = phone_server[0]
    with Memory.open(tmp_path / "data", tokenizer=engine.encode, embedder=hash_embedder) as memory:
        agent = UIAgent(engine, memory, Settings(method="hexa", agent_steps=4), device)
        events, end = run(agent, "Turn off Bluetooth.")
        assert isinstance(end, EpisodeEnd) and end.outcome in ("done", "step_limit", "loop")
        acted = [e for e in events if isinstance(e, Acted)]
        dones = [e for e in events if isinstance(e, Done)]
        assert acted and len(dones) == len([e for e in events if isinstance(e, Observed)])
        for ev, done in zip(acted, dones):
            assert str(parse(done.text)) == ev.action and not ev.error   # valid, as written
        assert acted[0].action in ("tap(1)", 'open_app("Settings")') or acted[0].element
        assert phone.state()["foreground"]["package"] != "" and phone.state()["visited"]
        episode = memory.episodes.get(end.session_id)
        assert [s["action"] for s in episode.steps] == [a.action for a in acted]
        assert episode.outcome == end.outcome and episode.steps[0]["turn"].startswith("Task: Turn off Bluetooth.")
        # the same episode with plain decoding chooses the same actions (lossless, constrained)
        device.reset_virtual()
        plain = UIAgent(engine, memory, Settings(method="vanilla", agent_steps=len(acted)), device)
        # memory now holds the first episode: compare on a fresh memory
    with Memory.open(tmp_path / "fresh", tokenizer=engine.encode, embedder=hash_embedder) as fresh:
        plain.memory = fresh
        events2, _ = run(plain, "Turn off Bluetooth.")
        assert [e.action for e in events2 if isinstance(e, Acted)][:len(acted)] == [a.action for a in acted]


class ScriptedEngine:
    """Writes the given actions one request at a time (the gate and the phone are under test)."""
    model_name = "scripted"
    context_window = 4096

    def __init__(self, actions):
        self.actions = list(actions)

    def constraint(self, grammar):
        return grammar

    def chat_ids(self, messages):
        return [1] * 10

    def generate(self, ids, *, constraint=None, cancel=None, **_):
        text = self.actions.pop(0)
        assert constraint.matches(text), text          # only what the screen allows is scripted
        yield Done("eos", text, (1, 2), 10, 2, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1, 2.0)


@pytest.fixture
def memory(tmp_path, hash_embedder):
    from memory import Memory

    with Memory.open(tmp_path / "mem", embedder=hash_embedder) as mem:
        yield mem


def test_the_phone_going_away_ends_the_episode_and_keeps_the_steps(device, phone_server, memory):
    phone, server, _ = phone_server
    agent = UIAgent(ScriptedEngine(['open_app("Settings")', "tap(1)"]), memory, Settings(agent_steps=5), device)
    events = agent.run("Turn off Bluetooth.")
    for ev in events:
        if isinstance(ev, Acted):
            server.stop()                       # the phone is unplugged after the first action
    end = ev
    assert isinstance(end, EpisodeEnd) and end.outcome == "disconnected"
    assert "stopped answering" in end.message or "cannot connect" in end.message
    assert [s["action"] for s in memory.episodes.get(end.session_id).steps] == ['open_app("Settings")']


def test_sensitive_actions_wait_for_the_user(device, phone_server, memory):
    phone = phone_server[0]
    asked = []
    setup = {"clock": {"alarms": [{"hour": 3, "minute": 0, "ampm": "PM", "label": "meeting", "days": [],
                                    "on": True, "vibrate": True, "sound": "Default"}], "expanded_alarm": 0}}
    device.reset_virtual(setup)
    device.perform(parse('open_app("Clock")'), [], device.observe())
    screen = device.observe()
    labels = [e.label for e in screen.elements]
    assert "Delete" in labels, labels

    def script():
        # the agent ranks elements; find where "Delete" lands in its ranking of this screen
        shown = agent.ranker.rank("Delete the alarm", screen.elements, 10)
        return [f"tap({[e.label for e in shown].index('Delete') + 1})"]

    for answer, outcome in ((False, "refused"), (True, "step_limit")):
        agent = UIAgent(ScriptedEngine([]), memory, Settings(agent_steps=1), device,
                        confirm=lambda q, a=answer: asked.append(q) or a)
        agent.engine.actions = script()
        before = len(phone.state()["clock"]["alarms"])
        _, end = run(agent, "Delete the alarm")
        assert end.outcome == outcome
        assert "Delete" in asked[-1]
        after = len(phone.state()["clock"]["alarms"])
        assert after == (before if not answer else before - 1)
