"""Crash safety of the vector index (memory/crashsafe.py, memory/stored.py): a real SIGKILL of a
writer process, the rebuild from the embeddings kept in SQLite (nothing re-embedded), the upgrade
of a store made before them, and `hexa memory check`. Real chromadb on disk throughout; the hash
embedder stands in for MiniLM (what is tested is the index, not the embedding)."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from support.fakes import HashEmbedder
from memory import Memory
from support.memory_helpers import ROOT, child_env, sentences

FACT = "The spare key to the blue boathouse is hidden under the third flowerpot."
QUERY = "spare key blue boathouse flowerpot"


class CountingEmbedder(HashEmbedder):
    def __init__(self):
        self.texts = 0

    def __call__(self, texts):
        self.texts += len(texts)
        return super().__call__(texts)


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[3])
    from pathlib import Path
    from support.fakes import HashEmbedder
    from memory import Memory
    mem = Memory.open(Path(sys.argv[1]), embedder=HashEmbedder(), max_file_mb=200)
    mem.add_document(Path(sys.argv[2]))
    print("FINISHED", flush=True)
""")


def _embedded(db, doc_id: int) -> int:
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return con.execute("SELECT COUNT(*) FROM chunks WHERE doc_id = ? AND embedded = 1",
                           (doc_id,)).fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        con.close()


@pytest.mark.slow
def test_sigkill_of_a_writer_mid_ingestion_then_the_earlier_fact_is_found(tmp_path):
    data = tmp_path / "data"
    fact, big = tmp_path / "fact.txt", tmp_path / "big.txt"
    fact.write_text(FACT)
    big.write_text(sentences(12000, "river boats"))
    with Memory.open(data, embedder=HashEmbedder()) as mem:
        mem.add_document(fact)
        assert mem.context_for(QUERY, k=1, kinds=("chunk",))[0].source.startswith("fact.txt")
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(data), str(big),
                             str(ROOT / "tests")], env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    db = data / "memory" / "hexa.db"
    try:
        deadline = time.monotonic() + 120
        while _embedded(db, 2) < 200 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the writer finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)  # mid-ingestion: its vectors half written
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    marker = data / "memory" / f"vectors.writer-{proc.pid}"
    assert marker.is_file()  # the writer never closed cleanly
    stored_before = _embedded(db, 2)

    emb = CountingEmbedder()
    with Memory.open(data, embedder=emb, max_file_mb=200) as mem:
        items = mem.context_for(QUERY, k=3, kinds=("chunk",))
        assert items[0].source.startswith("fact.txt")
        assert any("unclean shutdown" in n for n in mem.notices), mem.notices
        assert not marker.exists()
        total = mem.stats()["chunks"]
        assert mem.stats()["pending_vectors"] == 0
        assert mem.vectors.count("chunks") == total
        # the rebuild reused every stored embedding: only the chunks never embedded were embedded
        # (the query, too: one text)
        assert emb.texts <= total - stored_before + 1 + 16  # + a batch in flight at the kill
        # (HNSW itself is not asserted to reach the fact: with chromadb's defaults it misses an
        # early outlier followed by a thousand near-duplicates now and then, crash or not; the
        # exact search over the stored embeddings, used up to stored.EXACT_MAX, does not)
        assert mem.check(full=True).unstored == 0


def test_a_dead_writer_marker_makes_the_next_use_rebuild_without_embedding(tmp_path):
    data = tmp_path / "data"
    with Memory.open(data, embedder=HashEmbedder()) as mem:
        s = mem.new_session("assistant")
        mem.add_message(s.id, "user", FACT)
        (tmp_path / "doc.txt").write_text(sentences(300))
        mem.add_document(tmp_path / "doc.txt")
        n = mem.vectors.count("chunks") + mem.vectors.count("messages")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (data / "memory" / f"vectors.writer-{gone.pid}").write_text("0")  # a writer that died
    emb = CountingEmbedder()
    with Memory.open(data, embedder=emb) as mem:
        assert mem.index.ready() is not None
        assert any("unclean shutdown" in x and f"rebuilt {n} vectors" in x for x in mem.notices)
        assert emb.texts == 0
        assert mem.vectors.count("chunks") + mem.vectors.count("messages") == n
        assert mem.context_for(QUERY, k=1)[0].text == f"User: {FACT}"
    assert not (data / "memory" / f"vectors.writer-{gone.pid}").exists()


HALF_WRITE = textwrap.dedent("""
    import os, signal, sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("PRAGMA cache_size = 1")          # spill pages into the file mid-transaction
    con.execute("BEGIN")
    con.execute("CREATE TABLE half_written (x)")
    con.executemany("INSERT INTO half_written VALUES (?)", ((os.urandom(500),) for _ in range(2000)))
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_catalog_left_mid_transaction_is_rolled_back_not_called_damaged(tmp_path):
    """A kill -9 inside a chromadb write leaves a hot rollback journal on its catalog; the next
    open undoes the interrupted write and keeps the index (before: the read-only pre-check could
    not roll it back, called the index damaged and rebuilt it)."""
    data = tmp_path / "data"
    with Memory.open(data, embedder=HashEmbedder()) as mem:
        s = mem.new_session("assistant")
        mem.add_message(s.id, "user", FACT)
    catalog = data / "memory" / "vectors" / "chroma.sqlite3"
    subprocess.run([sys.executable, "-c", HALF_WRITE, str(catalog)], check=False)
    assert catalog.with_name("chroma.sqlite3-journal").is_file()   # the hot journal is there
    with Memory.open(data, embedder=HashEmbedder()) as mem:
        assert mem.context_for(QUERY, k=1)[0].text == f"User: {FACT}"
        assert not any("damaged" in n for n in mem.notices), mem.notices
    assert not list((data / "memory").glob("vectors.broken-*"))
    con = sqlite3.connect(catalog)
    try:
        assert not con.execute("SELECT name FROM sqlite_master WHERE name = 'half_written'").fetchall()
    finally:
        con.close()


def test_a_clean_close_leaves_no_marker(tmp_path):
    with Memory.open(tmp_path / "data", embedder=HashEmbedder()) as mem:
        s = mem.new_session("assistant")
        mem.add_message(s.id, "user", FACT)
        assert (tmp_path / "data" / "memory" / f"vectors.writer-{os.getpid()}").is_file()
    assert not list((tmp_path / "data" / "memory").glob("vectors.writer-*"))


def test_an_older_store_gets_its_embeddings_from_chromadb_once(tmp_path):
    data = tmp_path / "data"
    with Memory.open(data, embedder=HashEmbedder()) as mem:
        s = mem.new_session("assistant")
        mem.add_message(s.id, "user", FACT)
        mem.add_message(s.id, "assistant", "Noted.", token_ids=[5, 6])
        (tmp_path / "doc.txt").write_text(sentences(200))
        mem.add_document(tmp_path / "doc.txt")
        counts = {n: mem.vectors.count(n) for n in ("messages", "chunks", "responses")}
    con = sqlite3.connect(data / "memory" / "hexa.db")  # as schema v4 left it
    con.executescript("DROP TABLE vectors; DROP TABLE vector_state; PRAGMA user_version = 4;")
    con.close()
    emb = CountingEmbedder()
    with Memory.open(data, embedder=emb) as mem:
        assert mem.store.version() == 5
        assert mem.index.ready() is not None
        assert any("copied into the SQLite store" in x for x in mem.notices)
        for name, n in counts.items():
            assert mem.index.stored.count(name) == n
        assert emb.texts == 0
        mem.reindex()
        assert emb.texts == 0  # a rebuild re-embeds nothing
        assert mem.context_for(QUERY, k=1)[0].text.startswith(f"User: {FACT}")
    with Memory.open(data, embedder=emb) as mem:  # once: no second copy
        mem.index.ready()
        assert not any("copied" in x for x in mem.notices)


def test_exact_search_honours_the_filters_chromadb_gets(mem, tmp_path):
    a = mem.new_session("assistant")
    b = mem.new_session("agent")
    mem.add_message(a.id, "user", "blue boathouse key question")
    mem.add_message(b.id, "user", "blue boathouse key task", mode="agent")
    qv = mem.embedder([QUERY])[0]
    vi = mem.index.ready()
    for where in ({"mode": {"$ne": "agent"}}, {"session_id": {"$ne": a.id}},
                  {"$and": [{"mode": {"$ne": "agent"}}, {"session_id": {"$ne": a.id}}]}, None):
        exact = [v for v, _, _ in vi.query("messages", qv, 5, where=where)]
        st, vi.stored = vi.stored, None
        hnsw = [v for v, _, _ in vi.query("messages", qv, 5, where=where)]
        vi.stored = st
        assert exact == hnsw, where


def _scramble_one(data, vid: str, bucket: int) -> None:
    """Fault injection: SQLite's embedding for ``vid`` differs from the one chromadb holds, so a
    query with it does not find ``vid`` (what an unreachable HNSW node looks like to the probe)."""
    import numpy as np

    from memory.stored import pack

    v = np.zeros(HashEmbedder.DIM, dtype=np.float32)
    v[bucket] = 1.0
    con = sqlite3.connect(data / "memory" / "hexa.db")
    con.execute("UPDATE vectors SET vector = ? WHERE vid = ?", (pack(v), vid))
    con.commit()
    con.close()


def test_memory_check_cli(tmp_path, monkeypatch, capsys):
    from app.cli import main

    monkeypatch.setenv("HEXA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HEXA_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr("memory.memory.Embedder", lambda *a, **kw: HashEmbedder())
    (tmp_path / "doc.txt").write_text(sentences(200))
    assert main(["memory", "add", str(tmp_path / "doc.txt")]) == 0
    capsys.readouterr()
    assert main(["memory", "check"]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1 and " 0 unreachable" in out and " s probe" in out

    _scramble_one(tmp_path / "data", "c3", 7)
    monkeypatch.setattr("memory.stored.EXACT_MAX", 0)  # the collection is searched by HNSW
    assert main(["memory", "check"]) == 1
    err = capsys.readouterr().err
    assert "1 unreachable" in err and "c3" in err and "--repair" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["memory", "check", "--repair"]) == 0
    assert "rebuilt from SQLite" in capsys.readouterr().out
    # the rebuild wrote chromadb from SQLite (the truth): they agree again
    assert main(["memory", "check"]) == 0

    monkeypatch.setattr("memory.stored.EXACT_MAX", 10**9)  # small collection: searched exactly
    _scramble_one(tmp_path / "data", "c4", 9)
    assert main(["memory", "check"]) == 0
    assert "searched exactly" in capsys.readouterr().out


def test_a_second_memory_of_the_same_process_is_no_crash(tmp_path):
    """Two ``Memory`` objects of one process share the pid, hence the marker: a live one."""
    a = Memory.open(tmp_path / "data", embedder=HashEmbedder())
    try:
        s = a.new_session("assistant")
        a.add_message(s.id, "user", FACT)
        with Memory.open(tmp_path / "data", embedder=HashEmbedder()) as b:
            assert b.index.ready() is not None
            assert not any("unclean" in n for n in b.notices)
        assert (tmp_path / "data" / "memory" / f"vectors.writer-{os.getpid()}").is_file()
    finally:
        a.close()
    assert not list((tmp_path / "data" / "memory").glob("vectors.writer-*"))
