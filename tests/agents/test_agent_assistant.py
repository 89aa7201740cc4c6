"""Assistant agent with the real engine (few tokens) and a real memory."""
from __future__ import annotations

import threading

import pytest

from agents.assistant import Assistant
from agents.common import AgentError, fit_chat
from agents.events import Saved
from app.settings import Settings
from engine.events import Done, Notice, Text

pytestmark = pytest.mark.timeout(300)

def test_respond_stores_turns_and_indexes(real_engine, memory):
    agent = Assistant(real_engine, memory, Settings(max_tokens=8))
    sid = memory.new_session("assistant").id
    events = list(agent.respond(sid, "What is the capital of France?"))
    assert any(isinstance(e, Text) for e in events)
    done = [e for e in events if isinstance(e, Done)][0]
    saved = [e for e in events if isinstance(e, Saved)]
    assert [s.role for s in saved] == ["user", "assistant"]
    stored = memory.messages(sid)
    assert stored[1].text == done.text and stored[1].token_ids == list(done.token_ids)
    assert stored[1].stats.new_tokens == done.new_tokens
    assert memory.get_session(sid).title.startswith("What is the capital")
    # second turn sees the first in its prompt; regenerate replaces the last answer
    list(agent.respond(sid, "And of Italy?"))
    list(agent.regenerate(sid))
    assert [m.role for m in memory.messages(sid)] == ["user", "assistant", "user", "assistant"]


def test_cancel_before_start_gives_cancelled_done(real_engine, memory):
    agent = Assistant(real_engine, memory, Settings(max_tokens=50))
    sid = memory.new_session("assistant").id
    cancel = threading.Event()
    cancel.set()
    done = [e for e in agent.respond(sid, "Tell me a story", cancel) if isinstance(e, Done)][0]
    assert done.stop_reason == "cancelled"


def test_regenerate_without_messages(tokenizer_engine, memory):
    agent = Assistant(tokenizer_engine, memory, Settings(max_tokens=8))   # refused before any generation
    sid = memory.new_session("assistant").id
    with pytest.raises(AgentError, match="."):
        list(agent.regenerate(sid))


def test_context_window_drops_older_turns(tokenizer_engine):
    turns = [{"role": r, "content": f"message number {i} " * 20}
             for i, r in zip(range(10), ["user", "assistant"] * 5)]
    full = tokenizer_engine.chat_ids([{"role": "system", "content": "sys"}, *turns,
                                      {"role": "user", "content": "last"}])
    ids, notices, _ = fit_chat(tokenizer_engine, "sys", turns, "last", budget=len(full) // 2)
    assert len(ids) <= len(full) // 2 and notices and "older message" in notices[0]
    kept = tokenizer_engine.decode(ids)           # the newest turns and the message stay, the oldest go
    assert kept.endswith("user\nlast\nassistant\n") and "message number 9" in kept and "message number 0" not in kept
    ids, notices, _ = fit_chat(tokenizer_engine, "sys", [], "word " * 500 + "What is this?", budget=64)
    assert len(ids) <= 64 and "kept its last" in notices[-1]
    assert "What is this?" in tokenizer_engine.decode(ids)      # the oldest words go, as in the engine


def test_notice_is_yielded_when_context_is_full(real_engine, memory):
    agent = Assistant(real_engine, memory, Settings(max_tokens=8, retrieval=False))
    sid = memory.new_session("assistant").id
    long = "lorem ipsum dolor sit amet " * 60
    for i in range(2 + real_engine.context_window // 400):
        memory.add_message(sid, "user", f"{i} {long}")
        memory.add_message(sid, "assistant", f"{i} {long}")
    events = list(agent.respond(sid, "Summarize our talk."))
    assert any(isinstance(e, Notice) and "Context window full" in e.message for e in events)


def test_a_small_context_window_keeps_half_for_the_prompt():
    """A qnn engine built for a 192-token context: the answer may not take the room the system
    prompt and the message need (it once left 32 tokens, and the message was cut to 1 token)."""
    from types import SimpleNamespace

    from agents.common import prompt_budget

    budget, max_new = prompt_budget(SimpleNamespace(context_window=184), 256)
    assert budget == 92 and max_new == 92
    budget, max_new = prompt_budget(SimpleNamespace(context_window=4096), 256)
    assert (budget, max_new) == (3840, 256)


def test_a_first_message_opens_a_session_titled_after_it(real_engine, memory):
    agent = Assistant(real_engine, memory, Settings(max_tokens=4))
    events = list(agent.respond(None, "  How do   tides work, and why are there two a day?"))
    sid = [e for e in events if isinstance(e, Saved)][0].session_id
    assert memory.get_session(sid).title == "How do tides work, and why are there two…"
    assert [m.role for m in memory.messages(sid)] == ["user", "assistant"]


def test_continue_resumes_from_the_responses_own_tokens(real_engine, memory, monkeypatch):
    """Greedy decoding continued after a cut gives the tokens one longer run would have given: the
    response's own ids are marked as the answer so far (``continues``), which the engine feeds in
    decoding's arithmetic, not as bf16 prompt rows."""
    agent = Assistant(real_engine, memory, Settings(max_tokens=6, retrieval=False, history_drafting=False))
    sid = memory.new_session("assistant").id
    list(agent.respond(sid, "Write a long story about a dragon who learns to cook."))
    first = memory.messages(sid)[1]
    assert first.stats.stop_reason == "max_tokens"
    told: list[int] = []
    generate = real_engine.generate
    monkeypatch.setattr(real_engine, "generate", lambda *a, **kw: told.append(kw.get("continues", 0)) or generate(*a, **kw))
    events = list(agent.continue_last(sid))
    monkeypatch.undo()
    assert told == [6]
    grown = memory.messages(sid)[1]
    assert grown.id == first.id and grown.token_ids[:6] == first.token_ids and len(grown.token_ids) == 12
    longer = Assistant(real_engine, memory, Settings(max_tokens=12, retrieval=False, history_drafting=False))
    other = memory.new_session("assistant").id
    list(longer.respond(other, "Write a long story about a dragon who learns to cook."))
    assert memory.messages(other)[1].token_ids == grown.token_ids
    assert grown.text == first.text + [e for e in events if isinstance(e, Done)][0].text


def test_context_tokens_counts_the_conversation(tokenizer_engine, tmp_path, hash_embedder):
    from memory import Memory

    with Memory.open(tmp_path / "data", tokenizer=tokenizer_engine.encode, embedder=hash_embedder) as memory:
        agent = Assistant(tokenizer_engine, memory, Settings(max_tokens=4))
        sid = memory.new_session("assistant").id
        empty = agent.context_tokens(sid)
        memory.add_message(sid, "user", "word " * 50)
        assert agent.context_tokens(sid) >= empty + 50


def _done(events) -> Done:
    return [e for e in events if isinstance(e, Done)][0]


def test_a_turn_with_retrieved_context_leaves_the_next_turn_its_whole_kv(real_engine, memory):
    """The context retrieved for a message is kept with it and rendered with it in later turns, so
    turn 2's prompt starts with turn 1's prompt and answer: the engine prefills only the new message.
    (Rendered without it, turn 2 reused only the prompt up to turn 1's words: 48 of 175 tokens.)"""
    agent = Assistant(real_engine, memory, Settings(max_tokens=8))
    earlier = memory.new_session("assistant").id
    list(agent.respond(earlier, "The Louvre in Paris is the largest art museum in the world."))
    sid = memory.new_session("assistant").id
    first = _done(agent.respond(sid, "Which museum in Paris is the largest?"))
    user = memory.messages(sid)[0]
    assert "Louvre" in user.context.text        # turn 1 was sent with retrieved context
    second = _done(agent.respond(sid, "And when was it built?"))
    assert second.reused_tokens >= first.prompt_tokens + first.new_tokens - 1
    # regenerate sends the message with the context it was sent with: the whole prompt is reused
    again = _done(agent.regenerate(sid))
    assert again.prompt_tokens == second.prompt_tokens and again.reused_tokens == again.prompt_tokens - 1
