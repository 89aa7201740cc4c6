"""What the assistant retrieves, with the real engine and a real memory (MiniLM, chromadb): the
Erebo sequence of issue 24, the switches, and the prompt size the gauge shows."""
from __future__ import annotations

import pytest

from agents.assistant import Assistant, describe
from agents.events import Saved
from app.settings import Settings
from engine.events import Done

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

EREBO = ["Tell me a story about a dragon named Erebo who builds a castle.",
         "Erebo the dragon is proud of his castle. What does Erebo do next?"]


class Recording:
    """The real engine, keeping the prompt ids of every request."""

    def __init__(self, engine):
        self.engine, self.prompts = engine, []

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def generate(self, prompt, **kw):
        self.prompts.append(list(prompt))
        return self.engine.generate(prompt, **kw)


def _ask(agent, text, **kw):
    events = list(agent.respond(None, text, **kw))
    user = next(e for e in events if isinstance(e, Saved) and e.role == "user")
    done = next(e for e in events if isinstance(e, Done))
    return user, done


def test_two_dragon_chats_do_not_answer_the_capital_of_france(real_engine, memory):
    engine = Recording(real_engine)
    agent = Assistant(engine, memory, Settings(max_tokens=40))
    for text in EREBO:                          # two saved chats about the dragon
        _ask(agent, text)
    user, done = _ask(Assistant(engine, memory, Settings(max_tokens=16)), "What is the capital of France?")
    prompt = engine.prompts[-1]
    assert user.context is None and "Erebo" not in engine.decode(prompt)   # nothing unrelated sent
    assert "Paris" in done.text and "Erebo" not in done.text
    # the gauge's figure is the prompt sent, exactly (it was 645 tokens here before)
    assert user.prompt_tokens == len(prompt) == done.prompt_tokens < 80
    stored = memory.messages(user.session_id)[0]
    assert stored.context is None
    # "Say hello." built a 2,612-token prompt in the report: now the system prompt and the words
    user, done = _ask(agent, "Say hello.")
    assert user.context is None and user.prompt_tokens == len(engine.prompts[-1]) < 80
    # a question about the dragon still gets the dragon, and says where it came from
    user, done = _ask(agent, "What did the dragon Erebo build?")
    assert user.context is not None and user.context.items
    assert all(it.title.startswith(("Tell me a story", "Erebo the dragon")) for it in user.context.items)
    assert describe(user.context).startswith("context: ") and "note" in describe(user.context)
    assert "Erebo" in engine.decode(engine.prompts[-1])
    assert user.prompt_tokens == len(engine.prompts[-1])
    budget = 8 * len(real_engine.encode("What did the dragon Erebo build?"))
    assert sum(it.tokens for it in user.context.items) <= budget       # proportional to the question


def test_memory_switches_per_message_session_and_setting(real_engine, memory):
    on = Assistant(real_engine, memory, Settings(max_tokens=4))
    _ask(on, EREBO[0])
    question = "What did the dragon Erebo build?"
    assert _ask(on, question)[0].context is not None
    assert _ask(on, question, retrieval=False)[0].context is None          # this message only
    sid = memory.new_session("assistant", "no memory here").id
    memory.set_session_retrieval(sid, False)
    events = list(on.respond(sid, question))
    assert next(e for e in events if isinstance(e, Saved)).context is None  # the session's switch
    events = list(on.respond(sid, question, retrieval=True))               # the message wins
    assert next(e for e in events if isinstance(e, Saved)).context is not None
    off = Assistant(real_engine, memory, Settings(max_tokens=4, retrieval=False))
    assert _ask(off, question)[0].context is None                          # the setting
    assert _ask(off, question, retrieval=True)[0].context is not None
