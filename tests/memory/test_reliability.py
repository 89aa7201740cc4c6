"""Crash safety (real kill -9), two processes at once (both with the real MiniLM: slow), and
vector index repair."""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory import Memory
from support.memory_helpers import child_env

KILL_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from memory import Memory
    data, src = Path(sys.argv[1]), Path(sys.argv[2])
    mem = Memory.open(data, chunk_tokens=24, chunk_overlap=4)
    s = mem.new_session("assistant", "before the crash")
    mem.add_message(s.id, "user", "Remember the word marmalade.")
    mem.add_message(s.id, "assistant", "Marmalade, noted.", token_ids=[7, 8, 9])
    print("READY", s.id, flush=True)
    i = 0
    while True:
        f = src / f"doc{i}.txt"
        f.write_text(f"Document {i} about topic {i}. " + "Filler sentence number %d. " * 60 % tuple(range(60)))
        mem.add_document(f, progress=lambda d, t: print("PROGRESS", i, d, t, flush=True))
        mem.add_message(s.id, "user", f"turn {i}")
        print("DONE", i, flush=True)
        i += 1
""")


@pytest.mark.slow
def test_kill_9_mid_ingestion_loses_at_most_the_item_in_flight(tmp_path):
    data, src = tmp_path / "data", tmp_path / "src"
    src.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", KILL_CHILD, str(data), str(src)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=child_env())
    try:
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.split())
            # kill in the middle of embedding the third document (after its SQLite commit)
            if line.startswith("PROGRESS 1 ") and 0 < int(line.split()[2]) < int(line.split()[3]):
                break
        assert proc.poll() is None, f"child ended early: {lines}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    sid = int(next(ln for ln in lines if ln[0] == "READY")[1])
    done = [int(ln[1]) for ln in lines if ln[0] == "DONE"]
    assert done == [0]

    with Memory.open(data, chunk_tokens=24, chunk_overlap=4) as mem:
        assert mem.store.integrity_ok()
        msgs = mem.messages(sid)
        assert [m.text for m in msgs[:2]] == ["Remember the word marmalade.", "Marmalade, noted."]
        assert msgs[1].token_ids == [7, 8, 9]
        docs = mem.list_documents()
        assert [d.name for d in docs][:1] == ["doc0.txt"]
        for d in docs:  # every document present is complete
            assert len(mem.document_chunks(d.id)) == d.chunks
        assert [d.name for d in docs] == ["doc0.txt", "doc1.txt"]  # committed, then killed
        assert mem.stats()["pending_vectors"] > 0  # doc1's vectors were being written
        # the next retrieval finishes the interrupted vectors and finds the documents
        items = mem.context_for("Document 0 about topic 0", k=2, kinds=("chunk",))
        assert items and items[0].source.startswith("doc0.txt")
        assert mem.stats()["pending_vectors"] == 0
        assert mem.vectors.count("chunks") == mem.stats()["chunks"]
        assert mem.drafting_sources("Remember the word marmalade") == [[7, 8, 9]]


CONC_WORK = textwrap.dedent("""
    def work(mem, data, tag):
        s = mem.new_session("assistant", f"session {tag}")
        for i in range(5):
            mem.add_message(s.id, "user", f"{tag} question {i}: tell me about planet {tag}{i}")
            mem.add_message(s.id, "assistant", f"{tag} answer {i}", token_ids=[ord(tag), i])
            mem.context_for(f"planet {tag}{i}", k=2)
        f = data / f"{tag}.txt"
        f.write_text(f"Field guide {tag}: the {tag}-bird nests in tall reeds. " * 40)
        mem.add_document(f)
        return s.id
""")
CONC_CHILD = CONC_WORK + textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from memory import Memory
    data, tag = Path(sys.argv[1]), sys.argv[2]
    mem = Memory.open(data)  # "a CLI command"
    mem.warmup()
    (data / f"ready-{tag}").touch()
    while not (data / "go").exists():
        time.sleep(0.01)
    sid = work(mem, data, tag)
    mem.close()
    print("OK", sid, flush=True)
""")


@pytest.mark.slow
def test_two_processes_open_the_same_store(tmp_path):
    """This process (standing for the TUI) and a child process write the same store at once."""
    data = tmp_path / "data"
    data.mkdir()
    ns: dict = {}
    exec(CONC_WORK, ns)
    tui = Memory.open(data)
    tui.warmup()
    child = subprocess.Popen([sys.executable, "-c", CONC_CHILD, str(data), "B"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=child_env())
    deadline = time.monotonic() + 90
    while not (data / "ready-B").exists() and time.monotonic() < deadline:
        assert child.poll() is None, child.stderr.read()[-2000:]
        time.sleep(0.05)
    (data / "go").touch()
    sids = {"A": ns["work"](tui, data, "A")}
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-2000:]
    sids["B"] = int(out.split()[1])
    # the long-lived process sees what the other one wrote
    items = tui.context_for("where does the B-bird nest?", k=1, kinds=("chunk",))
    assert items[0].source.startswith("B.txt")
    tui.close()

    with Memory.open(data) as mem:
        assert mem.store.integrity_ok()
        for tag, sid in sids.items():
            msgs = mem.messages(sid)
            assert len(msgs) == 10
            assert msgs[1].token_ids == [ord(tag), 0]
        assert sorted(d.name for d in mem.list_documents()) == ["A.txt", "B.txt"]
        assert mem.stats()["pending_vectors"] == 0
        items = mem.context_for("where does the A-bird nest?", k=1, kinds=("chunk",))
        assert items[0].source.startswith("A.txt")
        assert mem.drafting_sources("B question 3: tell me about planet B3")[0] == [ord("B"), 3]
        assert not mem.notices  # no repair was needed: the index is consistent
        assert {n: mem.vectors.count(n) for n in ("messages", "responses", "chunks")} == {
            "messages": 20, "responses": 10, "chunks": mem.stats()["chunks"]}


def _seed(mem: Memory, tmp_path: Path):
    s = mem.new_session("assistant")
    mem.add_message(s.id, "user", "How tall is Mount Everest?")
    mem.add_message(s.id, "assistant", "About 8,849 metres.", token_ids=[88, 49])
    p = tmp_path / "birds.txt"
    p.write_text("Penguins cannot fly but are excellent swimmers in cold southern oceans.")
    mem.add_document(p)


def test_reindex_after_deleting_the_vector_folder(tmp_path, hash_embedder):
    data = tmp_path / "data"
    with Memory.open(data, embedder=hash_embedder) as mem:
        _seed(mem, tmp_path)
    shutil.rmtree(data / "memory" / "vectors")
    with Memory.open(data, embedder=hash_embedder) as mem:
        assert mem.drafting_sources("Everest height") == [[88, 49]]
        assert any("missing" in n for n in mem.notices)
        items = mem.context_for("Penguins cannot fly", k=1)
        assert "Penguins" in items[0].text
        # an explicit reindex (what `hexa memory reindex` runs) rebuilds everything
        assert mem.reindex() == 4  # 2 messages + 1 response + 1 chunk
    shutil.rmtree(data / "memory" / "vectors")
    with Memory.open(data, embedder=hash_embedder) as mem:
        assert mem.reindex() == 4
        assert "Penguins" in mem.context_for("Penguins swimmers", k=1)[0].text


def _garble(vectors: Path) -> None:
    for f in vectors.rglob("*"):
        if f.is_file():
            f.write_bytes(b"garbage" * 100)


def test_corrupt_vector_index_is_detected_and_rebuilt(tmp_path, hash_embedder):
    data = tmp_path / "data"
    with Memory.open(data, embedder=hash_embedder) as mem:
        _seed(mem, tmp_path)
    _garble(data / "memory" / "vectors")
    with Memory.open(data, embedder=hash_embedder) as mem:
        items = mem.context_for("Penguins swimmers", k=1)
        assert items and "Penguins" in items[0].text
        assert any(n.startswith("vector index damaged") for n in mem.notices)
        assert mem.drafting_sources("Mount Everest") == [[88, 49]]
        assert mem.stats()["pending_vectors"] == 0
    assert len(list((data / "memory").glob("vectors.broken-*"))) == 1  # kept for inspection


def test_corrupt_index_is_rebuilt_while_another_memory_is_open(tmp_path, hash_embedder):
    """chromadb caches one system per path and process: repairing one index must not disturb
    another memory open in the same process (the TUI keeps one open)."""
    other = Memory.open(tmp_path / "other", embedder=hash_embedder)
    try:
        s = other.new_session("assistant")
        other.add_message(s.id, "user", "Otters hold hands while sleeping.")
        data = tmp_path / "data"
        with Memory.open(data, embedder=hash_embedder) as mem:
            _seed(mem, tmp_path)
        _garble(data / "memory" / "vectors")
        with Memory.open(data, embedder=hash_embedder) as mem:
            assert "Penguins" in mem.context_for("Penguins swimmers", k=1)[0].text
            assert any(n.startswith("vector index damaged") for n in mem.notices)
        assert "Otters" in other.context_for("otters sleeping", k=1)[0].text
        assert not other.notices
    finally:
        other.close()


def test_an_index_chromadb_refuses_to_start_on_is_rebuilt(tmp_path, hash_embedder):
    """A valid SQLite catalog that chromadb's start-up rejects: the failed start is forgotten,
    so the index rebuilt at the same path starts afresh."""
    data = tmp_path / "data"
    with Memory.open(data, embedder=hash_embedder) as mem:
        _seed(mem, tmp_path)
    con = sqlite3.connect(data / "memory" / "vectors" / "chroma.sqlite3")
    con.execute("UPDATE migrations SET hash = 'bogus'")
    con.commit()
    con.close()
    with Memory.open(data, embedder=hash_embedder) as mem:
        assert "Penguins" in mem.context_for("Penguins swimmers", k=1)[0].text
        assert any(n.startswith("vector index damaged (InternalError: Inconsistent hash")
                   for n in mem.notices)
