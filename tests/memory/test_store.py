"""Sessions, messages, export, stats and schema versions on a real SQLite store."""
from __future__ import annotations

import json
import sqlite3

import pytest

from memory import Memory, MemoryError
from memory.store import SCHEMA_VERSION


def test_sessions_crud(mem):
    a = mem.new_session("assistant", "First", model="smollm2", system_prompt="Be brief.")
    b = mem.new_session("summarizer", "Second")
    assert a.id != b.id and a.system_prompt == "Be brief."
    mem.add_message(a.id, "user", "hi")  # bumps a.updated
    assert [s.id for s in mem.list_sessions()] == [a.id, b.id]
    assert [s.id for s in mem.list_sessions("summarizer")] == [b.id]
    mem.rename_session(b.id, "Renamed")
    mem.set_system_prompt(b.id, "Summarize.")
    got = mem.get_session(b.id)
    assert got.title == "Renamed" and got.system_prompt == "Summarize."
    assert mem.list_sessions()[0].id == b.id
    mem.delete_session(a.id)
    assert mem.get_session(a.id) is None and mem.messages(a.id) == []
    with pytest.raises(MemoryError):
        mem.rename_session(999, "x")


def test_messages_round_trip(mem):
    s = mem.new_session("assistant", model="m1")
    u = mem.add_message(s.id, "user", "What is 2+2?")
    stats = {"ttft_ms": 120.5, "ms_per_token": 31.2, "mean_accepted": 2.75, "stop_reason": "eos"}
    r = mem.add_message(s.id, "assistant", "4", token_ids=[19, 220, 70000], stats=stats)
    msgs = mem.messages(s.id)
    assert [m.id for m in msgs] == [u.id, r.id]
    assert msgs[1].token_ids == [19, 220, 70000] and msgs[1].stats == stats
    assert msgs[1].mode == "assistant" and msgs[1].model == "m1"  # inherited from the session
    assert msgs[0].token_ids == [] and msgs[0].stats == {}
    mem.delete_message(r.id)  # regenerate
    assert [m.id for m in mem.messages(s.id)] == [u.id]
    with pytest.raises(MemoryError):
        mem.add_message(12345, "user", "orphan")


def test_link_summary_and_export(mem, tmp_path):
    p = tmp_path / "article.txt"
    p.write_text("A long article about rivers and their deltas. " * 20)
    doc = mem.add_document(p)
    s = mem.new_session("summarizer", "Rivers")
    mem.add_message(s.id, "user", "Summarize the article")
    summ = mem.add_message(s.id, "assistant", "Rivers form deltas.", token_ids=[1, 2],
                           stats={"ttft_ms": 50, "ms_per_token": 20, "mean_accepted": 3})
    mem.link_summary(summ.id, [doc.id])
    assert [d.id for d in mem.summary_sources(summ.id)] == [doc.id]
    md = mem.export_session(s.id, "md")
    assert md.startswith("# Rivers") and "Rivers form deltas." in md and "article.txt" in md
    assert "TTFT 50 ms" in md
    data = json.loads(mem.export_session(s.id, "json"))
    assert data["session"]["title"] == "Rivers"
    assert data["messages"][1]["token_ids"] == [1, 2]
    assert data["messages"][1]["sources"][0]["name"] == "article.txt"
    with pytest.raises(MemoryError):
        mem.export_session(s.id, "pdf")
    with pytest.raises(MemoryError):
        mem.link_summary(summ.id, [999])


def test_stats_and_wipe(mem, tmp_path):
    s = mem.new_session("assistant")
    mem.add_message(s.id, "user", "hello")
    mem.add_message(s.id, "assistant", "hi!", token_ids=[5], stats={"ttft_ms": 10.0})
    (tmp_path / "d.md").write_text("# Doc\n\nSome content to index.")
    mem.add_document(tmp_path / "d.md")
    st = mem.stats()
    assert (st["sessions"], st["messages"], st["responses"], st["documents"]) == (1, 2, 1, 1)
    assert st["chunks"] >= 1 and st["pending_vectors"] == 0 and st["avg_ttft_ms"] == 10.0
    assert st["schema_version"] == SCHEMA_VERSION
    mem.wipe()
    st = mem.stats()
    assert (st["sessions"], st["messages"], st["documents"], st["chunks"]) == (0, 0, 0, 0)
    assert mem.context_for("hello") == [] and mem.drafting_sources("hello") == []


def test_schema_version_and_newer_store_refused(tmp_path):
    d = tmp_path / "d"
    Memory.open(d).close()
    db = d / "memory" / "hexa.db"
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    con.commit()
    con.close()
    with pytest.raises(MemoryError, match="newer"):
        Memory.open(d)


def test_open_is_lazy(tmp_path):
    with Memory.open(tmp_path / "d") as m:
        s = m.new_session("assistant")
        assert m.list_sessions()[0].id == s.id
        assert not m.vectors.is_open  # no chromadb, no model until needed
