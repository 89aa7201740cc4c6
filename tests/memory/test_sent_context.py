"""The store's contract for what a message was sent with (schema v4): the retrieved context in
its own column, typed response stats, the per-session retrieval switch, and the upgrade of a v3
store whose user messages kept their context inside the metrics JSON."""
from __future__ import annotations

import json
import sqlite3

from memory import ContextItem, Memory, ResponseStats, SentContext
from memory.store import MIGRATIONS, _split_sql


def _v3_store(path):
    """A store as hexa wrote it at schema v3, with one turn sent with retrieved context."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    for script in MIGRATIONS[:3]:
        for stmt in _split_sql(script):
            con.execute(stmt)
    con.execute("PRAGMA user_version = 3")
    con.execute("INSERT INTO sessions(id, title, mode, created, updated) VALUES (1, 'Dragon story', 'assistant', 1, 1)")
    sent = {"retrieved_context": "Relevant notes:\n- Erebo built a castle."}
    done = {"stop_reason": "eos", "new_tokens": 7, "ttft_ms": 80.0, "mean_accepted": 1.4, "t": 5.0}
    rows = [(1, "user", "What did Erebo build?", json.dumps(sent)),
            (2, "assistant", "A castle.", json.dumps(done)),
            (3, "user", "Thanks", json.dumps({"retrieved_context": ""}))]
    for mid, role, text, stats in rows:
        con.execute("INSERT INTO messages(id, session_id, role, text, stats, created) VALUES (?,1,?,?,?,1)",
                    (mid, role, text, stats))
    con.commit()
    con.close()


def test_a_v3_store_is_upgraded_and_keeps_what_was_sent(tmp_path, hash_embedder):
    _v3_store(tmp_path / "data" / "memory" / "hexa.db")
    with Memory.open(tmp_path / "data", embedder=hash_embedder) as mem:
        assert mem.store.version() == len(MIGRATIONS) >= 4
        user, answer, thanks = mem.messages(1)
        # the context moved to its column, byte for byte (the next turn renders it as it was sent)
        assert user.context == SentContext("Relevant notes:\n- Erebo built a castle.", [])
        assert user.stats is None                       # nothing left in the metrics
        assert thanks.context is None and thanks.stats is None
        assert answer.context is None and answer.stats == ResponseStats(
            stop_reason="eos", new_tokens=7, ttft_ms=80.0, mean_accepted=1.4)   # "t" is no figure
        raw = mem.store.one("SELECT stats FROM messages WHERE id = 1")["stats"]
        assert "retrieved_context" not in raw
        assert mem.get_session(1).retrieval is None     # the setting decides


def test_sent_context_and_stats_round_trip(mem):
    s = mem.new_session("assistant", "chat")
    items = [ContextItem("message", "User: hi\nAssistant: hello", "session 3", 0.61, ref_id=7,
                         tokens=9, title="Greetings", session_id=3, created=12.5)]
    u = mem.add_message(s.id, "user", "hi again", context=SentContext("Notes:\n- hi", items))
    got = mem.get_message(u.id)
    assert got == u and got.context.items == items and got.context.text == "Notes:\n- hi"
    a = mem.add_message(s.id, "assistant", "hey", token_ids=[1], stats=ResponseStats(new_tokens=1, ttft_ms=9.0))
    assert mem.get_message(a.id).stats == ResponseStats(new_tokens=1, ttft_ms=9.0)
    assert mem.stats()["avg_ttft_ms"] == 9.0            # the figures still feed the aggregates
    assert json.loads(mem.export_session(s.id, "json"))["messages"][0]["context"]["items"][0]["title"] == "Greetings"


def test_the_session_switch_is_stored(mem):
    s = mem.new_session("assistant", "chat")
    mem.set_session_retrieval(s.id, False)
    assert mem.get_session(s.id).retrieval is False
    mem.set_session_retrieval(s.id, True)
    assert mem.list_sessions()[0].retrieval is True
    mem.set_session_retrieval(s.id, None)
    assert mem.get_session(s.id).retrieval is None
