"""Sessions, messages, export, stats and schema versions on a real SQLite store."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from memory import Memory, ResponseStats, StoreError
from memory.store import SCHEMA_VERSION

from support.memory_helpers import child_env


def test_error_classes():
    import memory

    assert issubclass(memory.DocumentError, StoreError)
    assert issubclass(memory.IngestCancelled, StoreError)
    assert not hasattr(memory, "MemoryError")  # it shadowed the builtin: no alias is left


def test_sessions_crud(mem):
    a = mem.new_session("assistant", "First", model="smollm2", system_prompt="Be brief.")
    b = mem.new_session("summarizer", "Second")
    assert a.id != b.id and a.system_prompt == "Be brief."
    mem.add_message(a.id, "user", "hi")  # bumps a.updated
    assert [s.id for s in mem.list_sessions()] == [a.id, b.id]
    assert [s.id for s in mem.list_sessions("summarizer")] == [b.id]
    mem.rename_session(b.id, "Renamed")
    mem.set_system_prompt(b.id, "Summarize.")
    mem.set_session_model(b.id, "qwen")
    got = mem.get_session(b.id)
    assert (got.title, got.system_prompt, got.model) == ("Renamed", "Summarize.", "qwen")
    assert mem.list_sessions()[0].id == b.id
    mem.delete_session(a.id)
    assert mem.get_session(a.id) is None and mem.messages(a.id) == []
    with pytest.raises(StoreError, match="no session 999"):
        mem.rename_session(999, "x")
    with pytest.raises(StoreError, match="no session 999"):
        mem.delete_session(999)


def test_messages_round_trip(mem):
    s = mem.new_session("assistant", model="m1")
    u = mem.add_message(s.id, "user", "What is 2+2?")
    stats = {"ttft_ms": 120.5, "ms_per_token": 31.2, "mean_accepted": 2.75, "stop_reason": "eos"}
    r = mem.add_message(s.id, "assistant", "4", token_ids=[19, 220, 70000], stats=stats)
    msgs = mem.messages(s.id)
    assert [m.id for m in msgs] == [u.id, r.id]
    assert msgs[1].token_ids == [19, 220, 70000] and msgs[1].stats == ResponseStats(**stats)
    assert msgs[1].mode == "assistant" and msgs[1].model == "m1"  # inherited from the session
    assert msgs[0].token_ids == [] and msgs[0].stats is None and msgs[0].context is None
    assert mem.get_message(r.id) == msgs[1]
    mem.delete_message(r.id)  # regenerate
    assert [m.id for m in mem.messages(s.id)] == [u.id]
    assert mem.drafting_sources("What is 2+2?") == []  # its vectors went with it
    with pytest.raises(StoreError, match="no session 12345"):
        mem.add_message(12345, "user", "orphan")


def test_update_message_edits_in_place_and_refreshes_vectors(mem):
    s = mem.new_session("assistant")
    u = mem.add_message(s.id, "user", "Tell me about volcanoes")
    a = mem.add_message(s.id, "assistant", "Volcanoes erupt.", token_ids=[1, 2])
    before = mem.get_session(s.id).updated
    # continue a reply: text and token ids grow, stats are replaced
    mem.update_message(a.id, text="Volcanoes erupt. Magma rises.", token_ids=[1, 2, 3],
                       stats={"ttft_ms": 12.0})
    got = mem.get_message(a.id)
    assert (got.text, got.token_ids, got.stats) == ("Volcanoes erupt. Magma rises.", [1, 2, 3],
                                                    ResponseStats(ttft_ms=12.0))
    assert mem.get_session(s.id).updated >= before
    assert mem.stats()["pending_vectors"] == 0 and mem.stats()["avg_ttft_ms"] == 12.0
    assert mem.drafting_sources("Tell me about volcanoes") == [[1, 2, 3]]
    hit = mem.context_for("Magma rises", k=1, kinds=("message",))[0]
    assert "Magma rises." in hit.text
    # token ids left out are kept; None clears them (and the reply stops being a drafting source)
    mem.update_message(a.id, text="Volcanoes erupt loudly.")
    assert mem.get_message(a.id).token_ids == [1, 2, 3]
    mem.update_message(a.id, token_ids=None)
    assert mem.get_message(a.id).token_ids == []
    assert mem.drafting_sources("Tell me about volcanoes") == []
    # editing the question re-files the reply under the new question
    mem.update_message(a.id, token_ids=[7])
    mem.update_message(u.id, text="How do geysers work?")
    assert mem.drafting_sources("How do geysers work?", max_count=1) == [[7]]
    assert mem.vectors.count("responses") == 1 and mem.vectors.count("messages") == 2
    with pytest.raises(StoreError, match="no message 999"):
        mem.update_message(999, text="x")


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
    assert md.startswith("# Rivers") and "Rivers form deltas." in md
    assert "Sources: article.txt" in md
    assert "*TTFT 50 ms · 20.0 ms/token · 3.00 accepted/step*" in md
    data = json.loads(mem.export_session(s.id, "json"))
    assert data["session"]["title"] == "Rivers"
    assert data["messages"][1]["token_ids"] == [1, 2]
    assert data["messages"][1]["sources"] == [{"id": doc.id, "name": "article.txt"}]
    with pytest.raises(StoreError, match="unknown export format"):
        mem.export_session(s.id, "pdf")
    with pytest.raises(StoreError, match="no session 999"):
        mem.export_session(999)
    with pytest.raises(StoreError, match="unknown message or document"):
        mem.link_summary(summ.id, [999])


def test_stats_and_wipe(mem, tmp_path):
    s = mem.new_session("assistant")
    mem.add_message(s.id, "user", "hello")
    mem.add_message(s.id, "assistant", "hi!", token_ids=[5], stats={"ttft_ms": 10.0})
    (tmp_path / "d.md").write_text("# Doc\n\nSome content to index.")
    mem.add_document(tmp_path / "d.md")
    st = mem.stats()
    assert (st["sessions"], st["messages"], st["responses"], st["documents"]) == (1, 2, 1, 1)
    assert st["chunks"] == 1 and st["pending_vectors"] == 0 and st["avg_ttft_ms"] == 10.0
    assert st["schema_version"] == SCHEMA_VERSION and st["sessions_by_mode"] == {"assistant": 1}
    assert st["db_bytes"] > 0 and st["vector_bytes"] > 0
    mem.wipe()
    st = mem.stats()
    assert (st["sessions"], st["messages"], st["documents"], st["chunks"]) == (0, 0, 0, 0)
    assert {n: mem.vectors.count(n) for n in ("messages", "responses", "chunks")} == {
        "messages": 0, "responses": 0, "chunks": 0}
    assert mem.context_for("hello") == [] and mem.drafting_sources("hello") == []


class _Spy:
    """A connection stand-in recording, for each statement, whether the store's lock is held."""

    def __init__(self, conn, lock):
        self.conn, self.lock, self.seen = conn, lock, []

    def execute(self, sql, *args):
        self.seen.append((sql.split()[0].upper(), self.lock._is_owned()))
        return self.conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.conn, name)


def test_wipe_vacuums_under_the_store_lock(mem):
    mem.new_session("assistant")
    spy = _Spy(mem.store.conn, mem.store._lock)
    mem.store.conn = spy
    try:
        mem.wipe()
    finally:
        mem.store.conn = spy.conn
    assert ("VACUUM", True) in spy.seen
    assert all(held for _, held in spy.seen)


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
    with pytest.raises(StoreError, match="newer"):
        Memory.open(d)


def test_open_is_lazy(tmp_path, hash_embedder):
    with Memory.open(tmp_path / "d", embedder=hash_embedder) as m:
        s = m.new_session("assistant")
        assert m.list_sessions()[0].id == s.id
        assert not m.vectors.is_open  # no chromadb, no model until needed


# Opening in a child process: as root, a read-only bind mount (in a user and mount namespace) is
# the real thing; a chmod would not stop root.
OPEN_CHILD = textwrap.dedent("""
    import sys
    from memory import Memory, StoreError
    for folder in sys.argv[1:]:
        try:
            Memory.open(folder).close()
            print("opened")
        except StoreError as e:
            print(e)
""")


def _open_read_only(data, *to_open) -> list[str]:
    """Open each of ``to_open`` in a child process that sees ``data`` read-only; its lines."""
    child = [sys.executable, "-c", OPEN_CHILD, *map(str, to_open)]
    if os.geteuid() != 0:
        folders = [data, *(p for p in data.rglob("*") if p.is_dir())]
        for f in folders:
            f.chmod(0o555)
        try:
            out = subprocess.run(child, capture_output=True, text=True, env=child_env(),
                                 timeout=60)
        finally:
            for f in folders:
                f.chmod(0o755)
    else:
        if not shutil.which("unshare"):
            pytest.skip("running as root (chmod does not stop root) and unshare is missing")
        bind_read_only = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift'
        out = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                              f'{bind_read_only} && exec "$@"', "sh", str(data), *child],
                             capture_output=True, text=True, env=child_env(), timeout=60)
        if out.returncode != 0 and not out.stdout:
            pytest.skip(f"running as root and cannot make a read-only bind: {out.stderr[-200:]}")
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


def test_read_only_data_folder_is_named(tmp_path):
    data = tmp_path / "data"
    with Memory.open(data) as m:
        m.new_session("assistant")
    fresh = data / "fresh"  # a data folder inside, whose memory folder does not exist yet
    fresh.mkdir()
    lines = _open_read_only(data, data, fresh)
    assert lines[0] == f"memory folder {data / 'memory'} is not writable (read-only?)"
    assert lines[1].startswith(f"cannot create memory folder {fresh / 'memory'} (")
    assert lines[1].endswith("; read-only?)")
    with Memory.open(data) as m:  # writable again: nothing was lost
        assert len(m.list_sessions()) == 1
