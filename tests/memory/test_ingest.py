"""Reading documents in while the memory is in use: cancelling, rolling back, failing, and other
threads working meanwhile (real SQLite + chromadb, deterministic hash embedder)."""
from __future__ import annotations

import threading
import time

import pytest

from memory import IngestCancelled, StoreError
from support.memory_helpers import sentences

BIG = 21_000  # sentences: about 2,100 chunks


def _nothing_kept(mem) -> None:
    st = mem.stats()
    assert mem.list_documents() == []
    assert (st["documents"], st["chunks"], st["pending_vectors"]) == (0, 0, 0)
    assert mem.vectors.count("chunks") == 0


def test_cancel_before_storing_keeps_nothing(mem, tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text(sentences(50))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(IngestCancelled) as ei:
        mem.add_document(p, cancel=cancel)
    assert str(ei.value) == "notes.txt: cancelled; nothing was kept"
    assert isinstance(ei.value, StoreError)
    assert mem.list_documents() == [] and mem.stats()["chunks"] == 0


def test_cancel_mid_ingestion_of_a_large_document(mem, tmp_path):
    p = tmp_path / "book.txt"
    p.write_text(sentences(BIG))
    mem.warmup()
    cancel = threading.Event()
    seen: list[tuple[int, int]] = []
    cancelled_at: list[float] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if done >= 48 and not cancel.is_set():  # three batches in
            cancel.set()
            cancelled_at.append(time.perf_counter())

    with pytest.raises(IngestCancelled, match="book.txt: cancelled"):
        mem.add_document(p, progress=progress, cancel=cancel)
    assert time.perf_counter() - cancelled_at[0] < 2.0
    assert seen[0][1] > 2000 and seen[-1][0] < seen[0][1]  # stopped well before the end
    _nothing_kept(mem)


class Stop(Exception):
    pass


def test_an_exception_from_progress_rolls_back_and_propagates(mem, tmp_path):
    p = tmp_path / "long.txt"
    p.write_text(sentences(800))

    def progress(done: int, total: int) -> None:
        if done > 0:
            raise Stop("the caller gave up")

    with pytest.raises(Stop, match="the caller gave up"):
        mem.add_document(p, progress=progress)
    _nothing_kept(mem)


class FailingEmbedder:
    """The hash embedder, failing from its ``fail_from``-th call on until ``healed``."""

    def __init__(self, inner, fail_from: int):
        self.inner, self.fail_from, self.calls, self.healed = inner, fail_from, 0, False
        self.loaded = True

    def model(self):
        return self

    def __call__(self, texts):
        self.calls += 1
        if self.calls >= self.fail_from and not self.healed:
            raise RuntimeError("embedding backend crashed")
        return self.inner(texts)


def test_an_embedder_failure_keeps_the_document_and_catches_up_later(tmp_path, hash_embedder):
    from memory import Memory

    embedder = FailingEmbedder(hash_embedder, fail_from=3)
    p = tmp_path / "guide.txt"
    p.write_text(sentences(400) + " The lighthouse keeper feeds the gulls at dawn.")
    with Memory.open(tmp_path / "data", embedder=embedder) as mem:
        doc = mem.add_document(p)
        assert mem.get_document(doc.id) == doc
        assert len(mem.document_chunks(doc.id)) == doc.chunks
        pending = mem.stats()["pending_vectors"]
        assert 0 < pending < doc.chunks  # two batches were written before the failure
        assert any("embedding backend crashed" in n for n in mem.notices)
        embedder.healed = True
        items = mem.context_for("lighthouse keeper feeds the gulls", k=1, kinds=("chunk",))
        assert "gulls at dawn" in items[0].text
        assert mem.stats()["pending_vectors"] == 0
        assert mem.vectors.count("chunks") == doc.chunks


def _ingest_in_background(mem, path, cancel):
    """Start reading ``path`` in on a thread; returns (thread, errors) once embedding started."""
    started, errors = threading.Event(), []

    def run():
        try:
            mem.add_document(path, progress=lambda d, t: d > 0 and started.set(), cancel=cancel)
        except IngestCancelled:
            pass
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
        finally:
            started.set()

    t = threading.Thread(target=run)
    t.start()
    assert started.wait(60)
    return t, errors


def test_other_threads_proceed_while_a_big_document_is_embedded(mem, tmp_path):
    s = mem.new_session("assistant")
    mem.add_message(s.id, "user", "Where do puffins nest?")
    mem.add_message(s.id, "assistant", "On cliffs.", token_ids=[3, 4])
    other = mem.new_session("assistant", "other")
    mem.add_message(other.id, "user", "keep me")
    p = tmp_path / "atlas.txt"
    p.write_text(sentences(BIG))
    cancel = threading.Event()
    t, errors = _ingest_in_background(mem, p, cancel)
    try:
        t0 = time.perf_counter()
        mem.delete_session(s.id)
        deleted_in = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem.add_message(other.id, "assistant", "Kept.")  # a chat goes on meanwhile
        items = mem.context_for("keep me", k=1, kinds=("message",))
        chatted_in = time.perf_counter() - t0
        assert t.is_alive()  # all this happened during the ingestion
    finally:
        cancel.set()
        t.join(60)
    assert not errors, errors
    assert deleted_in < 2.0 and chatted_in < 2.0
    assert items[0].text == "User: keep me\nAssistant: Kept."
    assert mem.get_session(s.id) is None and mem.drafting_sources("puffins nest") == []


def test_memory_used_from_two_threads(mem, tmp_path):
    """A UI-like thread lists, reads, renames and deletes while a worker reads a document in and
    adds messages: no error, no deadlock, and every UI call returns quickly."""
    doc = tmp_path / "big.txt"
    doc.write_text(sentences(2000))  # ~200 chunks
    errors: list[BaseException] = []
    started = threading.Event()

    def worker():
        try:
            s = mem.new_session("assistant", "worker")
            mem.add_document(doc, progress=lambda d, t: started.set())
            for i in range(10):
                mem.add_message(s.id, "user", f"question {i}")
                mem.add_message(s.id, "assistant", f"answer {i}", token_ids=[i])
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    def timed(call) -> float:
        t0 = time.perf_counter()
        call()
        return time.perf_counter() - t0

    mem.warmup()
    t = threading.Thread(target=worker)
    t.start()
    assert started.wait(30)
    slowest, rounds, deadline = 0.0, 0, time.monotonic() + 60
    while t.is_alive() and time.monotonic() < deadline:
        s = mem.new_session("assistant", "ui")
        mem.add_message(s.id, "user", "hello from the ui")
        slowest = max(slowest, *(timed(call) for call in (
            mem.list_sessions,
            lambda: [mem.messages(x.id) for x in mem.list_sessions()],
            lambda: mem.get_session(s.id),
            lambda: mem.rename_session(s.id, "renamed"),
            lambda: mem.delete_session(s.id))))
        rounds += 1
    t.join(10)
    assert not t.is_alive(), "the worker is stuck"
    assert not errors, errors
    assert rounds > 0 and slowest < 2.0
    assert [x.title for x in mem.list_sessions()] == ["worker"]
    assert len(mem.messages(mem.list_sessions()[0].id)) == 20
    (d,) = mem.list_documents()
    assert len(mem.document_chunks(d.id)) == d.chunks
    assert mem.stats()["pending_vectors"] == 0
    assert mem.vectors.count("chunks") == d.chunks
    assert mem.vectors.count("messages") == 20
