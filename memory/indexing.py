"""Keeping the chromadb index in step with SQLite: writing pending vectors, checking, repairing.

SQLite is the source of truth. A row is flagged ``embedded`` once its vectors are written; rows
left unflagged (a crash, a failed write, an edit) are embedded the next time the index is used.
The first use in a process also checks the index against SQLite (missing folder, damaged files,
missing or orphan vectors) and repairs it, with a notice.

Threads: the index lock is taken per batch of ``EMBED_BATCH`` rows, and the embedding itself (the
slow part) runs outside it, so retrieval and deletions from another thread proceed while a large
document is embedded; a batch whose rows changed meanwhile is embedded again under the lock. A
document being read in by ``embed_document`` is left to that call. A change that removes vectors
holds the lock from its SQL change to the drop (``drop``).
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from . import crashsafe
from .embeddings import Embedder
from .errors import IngestCancelled, StoreError
from .store import Store
from .stored import StoredVectors, text_key
from .vectors import COLLECTIONS, PREFIX, VectorIndex, parse_id

Progress = Callable[[int, int], None]

CONTEXT_ROLES = ("user", "assistant")  # the roles whose messages retrieval can return
BLANK = " \t\n\r\f\v"  # a message of only these has no "messages" vector (SQL: char(...) below)
EMBED_BATCH = 16  # also the progress granularity of an ingestion

# rows whose vectors are not written yet, in the shape the plans below read
PENDING_SQL = {
    "messages": (
        "SELECT m.id, m.session_id, m.role, m.text, m.mode, m.token_ids IS NOT NULL AS has_ids,"
        " (SELECT u.text FROM messages u WHERE u.session_id = m.session_id AND u.id < m.id"
        "   ORDER BY u.id DESC LIMIT 1) AS prev_text,"
        " (SELECT u.role FROM messages u WHERE u.session_id = m.session_id AND u.id < m.id"
        "   ORDER BY u.id DESC LIMIT 1) AS prev_role"
        " FROM messages m WHERE m.embedded = 0"),
    "chunks": (
        "SELECT c.id, c.doc_id, c.text, d.session_id FROM chunks c"
        " JOIN documents d ON d.id = c.doc_id WHERE c.embedded = 0"),
}
ALIAS = {"messages": "m", "chunks": "c"}


@dataclass
class _Plan:
    """The vectors a batch of rows gives: distinct texts to embed, and the upserts using them."""
    texts: dict[str, int] = field(default_factory=dict)  # text -> position, each embedded once
    upserts: list[tuple[str, str, str, dict]] = field(default_factory=list)
    # (collection, vector id, text embedded and stored with it, metadata)

    def add(self, collection: str, vid: str, text: str, meta: dict) -> None:
        self.texts.setdefault(text, len(self.texts))
        self.upserts.append((collection, vid, text, meta))


def _plan(table: str, rows: Sequence) -> _Plan:
    plan = _Plan()
    for r in rows:
        if table == "chunks":
            plan.add("chunks", f"c{r['id']}", r["text"],
                     {"doc_id": r["doc_id"], "session_id": r["session_id"] or 0})
            continue
        if r["role"] in CONTEXT_ROLES and r["text"].strip(BLANK):
            plan.add("messages", f"m{r['id']}", r["text"],
                     {"session_id": r["session_id"], "role": r["role"], "mode": r["mode"]})
        if r["role"] == "assistant" and r["has_ids"]:  # a drafting source, found by its request
            asked = r["prev_text"] if r["prev_role"] == "user" and r["prev_text"] else r["text"]
            plan.add("responses", f"r{r['id']}", asked,
                     {"session_id": r["session_id"], "mode": r["mode"]})
    return plan


class IndexKeeper:
    def __init__(self, store: Store, vectors: VectorIndex, embedder: Embedder,
                 notice: Callable[[str], None]):
        self.store, self.vectors, self.embedder, self.notice = store, vectors, embedder, notice
        self.lock = threading.RLock()  # the index and ``_checked``, within this process
        self._checked = False
        self._in_flight: set[int] = set()  # documents being embedded by ``embed_document``
        self.stored = StoredVectors(store)  # the embeddings, in SQLite
        self.markers = crashsafe.WriterMarkers(vectors.path.parent)
        vectors.stored = self.stored  # small collections are searched exactly, over these

    # -- use ----------------------------------------------------------------------------------
    def ready(self) -> VectorIndex | None:
        """The index, checked and caught up with SQLite; None (with a notice) if unusable."""
        return self.vectors if self.catch_up() is not None else None

    def catch_up(self, progress: Progress | None = None) -> int | None:
        """Write every pending vector; the number written, or None (noticed) on a failure, which
        leaves the rows pending for a later call."""
        try:
            return self._write_pending(progress)
        except Exception as e:
            self.failed(e)
            return None

    def embed_document(self, doc_id: int, total: int, progress: Progress | None,
                       cancel: threading.Event | None) -> None:
        """Write the vectors of a document just stored, reporting ``progress(done, total)``.

        Raises ``IngestCancelled`` when ``cancel`` is set before a batch, and whatever
        ``progress`` raises; the caller rolls the document back. A failure of the embedder or of
        the index is noticed and leaves the rest pending, caught up later."""
        self._in_flight.add(doc_id)
        try:
            rows = self._pending("chunks", where=" AND c.doc_id = ?", args=(doc_id,))
            done = total - len(rows)
            _report(progress, done, total)
            for batch in _batches(rows):
                if cancel is not None and cancel.is_set():
                    raise IngestCancelled("cancelled")
                try:
                    self._write_batch("chunks", batch)
                except Exception as e:
                    self.failed(e)
                    break
                done += len(batch)
                _report(progress, done, total)
            if done != total:
                _report(progress, total, total)  # the document is stored: this read-in is over
        finally:
            self._in_flight.discard(doc_id)

    def drop(self, messages: Sequence[int] = (), chunks: Sequence[int] = ()) -> None:
        """Delete the vectors of these rows. Call it holding ``lock`` since the rows changed in
        SQLite: a new row may reuse a deleted one's id, and its vectors, written in between,
        would go. Best effort: an orphan vector left behind is ignored by queries and cleaned
        at the next check."""
        if not messages and not chunks:
            return
        try:
            with self.lock:
                vids = ([f"m{i}" for i in messages] + [f"r{i}" for i in messages]
                        + [f"c{i}" for i in chunks])
                with self.store.write() as c:
                    self.stored.delete(c, vids)
                if not self.vectors.is_open and not self.vectors.exists():
                    return
                if messages:
                    self.vectors.delete("messages", ids=[f"m{i}" for i in messages])
                    self.vectors.delete("responses", ids=[f"r{i}" for i in messages])
                if chunks:
                    self.vectors.delete("chunks", ids=[f"c{i}" for i in chunks])
        except Exception as e:
            self.failed(e)

    def rebuild(self, progress: Progress | None = None) -> int:
        """Discard every vector and write them all again from SQLite."""
        with self.lock:
            try:
                self.vectors.open()
                self.vectors.reset()
            except Exception as e:
                self._start_afresh(damage=e)
            else:
                self._start_afresh()
        return self._write_pending(progress, crashsafe.REBUILD_BATCH)

    def clear(self) -> None:
        """Empty the index (every row is gone from SQLite too)."""
        with self.lock:
            try:
                self.vectors.reset()
            except Exception:
                self.vectors.discard()
            with self.store.write() as c:
                c.execute("DELETE FROM vectors")
            self._checked = True

    def close(self) -> None:
        with self.lock:
            self.vectors.close()
            self.markers.end()  # after chromadb's close: what we wrote is as safe as it gets

    def check(self, full: bool = True, repair: bool = False) -> crashsafe.CheckReport:
        """Probe that chromadb finds every vector (``full``) or the crash sample by its own
        embedding; with ``repair``, rebuild the index from SQLite when some are not."""
        with self.lock:
            return crashsafe.check(self, full, repair)

    # -- writing ------------------------------------------------------------------------------
    def _write_pending(self, progress: Progress | None, batch: int = EMBED_BATCH) -> int:
        with self.lock:
            self._ensure_checked()
        in_flight = tuple(self._in_flight)
        skip = f" AND c.doc_id NOT IN ({','.join('?' * len(in_flight))})" if in_flight else ""
        work = [("messages", self._pending("messages")),
                ("chunks", self._pending("chunks", where=skip, args=in_flight))]
        total, done, written = sum(len(rows) for _, rows in work), 0, 0
        for table, rows in work:
            for part in _batches(rows, batch):
                written += self._write_batch(table, part)
                done += len(part)
                _report(progress, done, total)
        return written

    def _write_batch(self, table: str, rows: list) -> int:
        """Embed a batch of pending rows and write their vectors; returns how many."""
        plan = _plan(table, rows)
        vectors, fresh = self._vectors_for(plan)  # outside the lock: the slow part
        with self.lock:
            self._ensure_checked()
            ids = [r["id"] for r in rows]
            current = self._pending(table, where=f" AND {ALIAS[table]}.id IN "
                                    f"({','.join('?' * len(ids))})", args=ids)
            if [tuple(r) for r in current] != [tuple(r) for r in rows]:
                # edited, deleted or written meanwhile: embed what is pending now (rare, so here)
                rows, plan = current, _plan(table, current)
                vectors, fresh = self._vectors_for(plan)
            if not self.markers.active:  # an unclean end from here on is detected next time
                self.markers.begin(self.stored.seq())
            with self.store.write() as c:  # before chromadb: a crash after it re-embeds nothing
                self.stored.put(c, [(col, vid, text, meta, vectors[plan.texts[text]])
                                    for col, vid, text, meta in plan.upserts if text in fresh])
            for name in COLLECTIONS:
                ups = [u for u in plan.upserts if u[0] == name]
                if ups:
                    self.vectors.upsert(name, [vid for _, vid, _, _ in ups],
                                        [vectors[plan.texts[text]] for _, _, text, _ in ups],
                                        [text for _, _, text, _ in ups],
                                        [meta for _, _, _, meta in ups])
            with self.store.write() as c:
                _mark(c, table, [r["id"] for r in rows], 1)
        return len(plan.upserts)

    def _vectors_for(self, plan: _Plan) -> tuple[list, set[str]]:
        """A vector per distinct text of ``plan`` (stored ones reused) and the texts embedded."""
        known = self.stored.lookup([vid for _, vid, _, _ in plan.upserts])
        out: list = [None] * len(plan.texts)
        for _, vid, text, _ in plan.upserts:
            hit = known.get(vid)
            if hit is not None and hit[0] == text_key(text):
                out[plan.texts[text]] = hit[1]
        fresh = {t for t, i in plan.texts.items() if out[i] is None}
        if fresh:
            todo = sorted(fresh, key=plan.texts.get)
            for t, v in zip(todo, self.embedder(todo)):
                out[plan.texts[t]] = v
        # a text shared by a stored and a new vid: store it for every vid lacking it
        fresh |= {text for _, vid, text, _ in plan.upserts if vid not in known}
        return out, fresh

    def _pending(self, table: str, where: str = "", args: Sequence = ()) -> list:
        return self.store.query(f"{PENDING_SQL[table]}{where} ORDER BY {ALIAS[table]}.id", args)

    # -- checking and repair ------------------------------------------------------------------
    def _ensure_checked(self) -> None:
        """Once per process (and after a failure): compare the index with SQLite and repair it."""
        if self._checked:
            return
        if not self.vectors.exists() and self._any_embedded():
            self.notice("vector index missing; rebuilding it from SQLite")
            self._mark_all(0)
        try:
            self.vectors.open()
            crashsafe.backfill_once(self)
            present = {name: self.vectors.ids(name) for name in COLLECTIONS}
        except Exception as e:
            self._start_afresh(damage=e)
        else:
            expected = self._reconcile(present)
            self._checked = True
            crashsafe.after_unclean_shutdown(self, expected)
        self._checked = True

    def _reconcile(self, present: dict[str, set[str]]) -> dict[str, set[str]]:
        """Queue rows whose vectors are missing, delete vectors whose rows are gone; returns the
        ids expected in the index (their rows flagged embedded)."""
        expected = self._expected_ids()
        missing = {"messages": set(), "chunks": set()}
        for name in COLLECTIONS:
            table = "chunks" if name == "chunks" else "messages"
            missing[table].update(parse_id(v) for v in expected[name] - present[name])
            orphans = present[name] - expected[name] - self._pending_ids(name)
            if orphans:
                self.vectors.delete(name, ids=sorted(orphans))
        n = sum(map(len, missing.values()))
        if n:
            self.notice(f"vector index incomplete ({n} items missing); re-indexing them from "
                        f"SQLite")
            with self.store.write() as c:
                for table, ids in missing.items():
                    _mark(c, table, ids, 0)
        for name in COLLECTIONS:
            expected[name] -= {f"{PREFIX[name]}{i}" for i in missing[
                "chunks" if name == "chunks" else "messages"]}
        return expected

    def _start_afresh(self, damage: Exception | None = None) -> None:
        """The one way the index is rebuilt: (a damaged one moved aside,) an empty index, and
        every row pending."""
        if damage is not None:
            aside = self.vectors.discard()
            self.notice(f"vector index damaged ({_one_line(damage)}); rebuilding it from SQLite"
                        + (f" (old copy: {aside.name})" if aside else ""))
            self.vectors.open()
        self._mark_all(0)
        self._checked = True

    def failed(self, e: Exception) -> None:
        if isinstance(e, StoreError):  # e.g. the embedding model is missing: nothing to repair
            self.notice(f"{e}; the vectors are written when it is fixed "
                        f"(or by `hexa memory reindex`)")
            return
        self.notice(f"vector index unavailable ({_one_line(e)}); it will be checked and "
                    f"rebuilt on next use")
        with self.lock:
            self._checked = False
            with contextlib.suppress(Exception):
                self.vectors.close()

    def _any_embedded(self) -> bool:
        return bool(self.store.scalar("SELECT EXISTS(SELECT 1 FROM messages WHERE embedded = 1)"
                                      " OR EXISTS(SELECT 1 FROM chunks WHERE embedded = 1)"))

    def _expected_ids(self) -> dict[str, set[str]]:
        q = self.store.query
        return {
            "messages": {f"m{r[0]}" for r in q(
                "SELECT id FROM messages WHERE embedded = 1 AND role IN ('user', 'assistant')"
                " AND trim(text, char(32, 9, 10, 13, 12, 11)) != ''")},
            "responses": {f"r{r[0]}" for r in q(
                "SELECT id FROM messages WHERE embedded = 1 AND role = 'assistant' "
                "AND token_ids IS NOT NULL")},
            "chunks": {f"c{r[0]}" for r in q("SELECT id FROM chunks WHERE embedded = 1")},
        }

    def _pending_ids(self, name: str) -> set[str]:
        table = "chunks" if name == "chunks" else "messages"
        return {f"{PREFIX[name]}{r[0]}" for r in self.store.query(
            f"SELECT id FROM {table} WHERE embedded = 0")}

    def _mark_all(self, value: int) -> None:
        with self.store.write() as c:
            c.execute("UPDATE messages SET embedded = ?", (value,))
            c.execute("UPDATE chunks SET embedded = ?", (value,))


def _mark(c, table: str, ids: Sequence[int], value: int) -> None:
    ids = list(ids)
    for i in range(0, len(ids), 500):  # SQLite caps the number of parameters of a statement
        part = ids[i:i + 500]
        c.execute(f"UPDATE {table} SET embedded = ? WHERE id IN ({','.join('?' * len(part))})",
                  [value, *part])


def _batches(rows: list, size: int = EMBED_BATCH) -> Iterator[list]:
    for i in range(0, len(rows), size):
        yield rows[i:i + size]


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _one_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0]}" if s else type(e).__name__
