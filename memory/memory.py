"""The ``Memory`` facade: history, documents, retrieval and drafting sources, all on the device.

Layout under the data folder::

    <data_dir>/memory/hexa.db        SQLite (WAL), the source of truth
    <data_dir>/memory/vectors/       chromadb index, rebuilt from SQLite when missing or damaged

Every change is committed to SQLite first; vectors are written afterwards and each row is flagged
``embedded`` once its vectors exist. Rows left unflagged by a crash (or a failed vector write) are
embedded the next time the index is used, and the first use in a process also checks the index
against SQLite (missing folder, damaged files, missing or orphan vectors) and repairs it with a
notice. Opening is cheap: chromadb and the embedding model load on the first retrieval or write
that needs them (``warmup()`` does it ahead of time, e.g. from a background thread).
"""
from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

from . import chunking, documents
from .embeddings import Embedder
from .errors import DocumentError, MemoryError
from .models import ContextItem, Document, Message, Session
from .store import Store, dumps, now, pack_ids, unpack_ids
from .vectors import COLLECTIONS, PREFIX, VectorIndex, parse_id

log = logging.getLogger("hexa.memory")

Tokenizer = Callable[[str], list[int]]
Progress = Callable[[int, int], None]

CONTEXT_ROLES = ("user", "assistant")
EMBED_BATCH = 16  # also the progress granularity of an ingestion


class Memory:
    def __init__(self, data_dir: Path, tokenizer: Tokenizer | None = None,
                 max_file_mb: float = 20.0, chunk_tokens: int = 200, chunk_overlap: int = 32,
                 on_notice: Callable[[str], None] | None = None, embedder: Embedder | None = None):
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / "memory"
        self.tokenizer: Tokenizer = tokenizer or chunking.estimate_tokenizer
        self.max_file_mb = float(max_file_mb)
        self.chunk_tokens = chunk_tokens
        self.chunk_overlap = chunk_overlap
        self.on_notice = on_notice
        self.notices: list[str] = []
        self.store = Store(self.root / "hexa.db")
        self.embedder = embedder or Embedder()
        self.vectors = VectorIndex(self.root / "vectors", self.embedder)
        self._vlock = threading.RLock()
        self._checked = False
        self._closed = False

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, data_dir: Path, tokenizer: Tokenizer | None = None, max_file_mb: float = 20.0,
             **kw) -> "Memory":
        """Open (creating if needed) the store under ``data_dir``. Fast: no model, no chromadb."""
        return cls(data_dir, tokenizer=tokenizer, max_file_mb=max_file_mb, **kw)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._vlock:
            self.vectors.close()
        self.store.close()

    def notice(self, text: str) -> None:
        self.notices.append(text)
        log.warning(text)
        if self.on_notice:
            with contextlib.suppress(Exception):
                self.on_notice(text)

    def warmup(self) -> None:
        """Load chromadb and the embedding model now (call from a background thread)."""
        self._index()
        self.embedder.model()

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text))

    # -- sessions -----------------------------------------------------------------------------
    def new_session(self, mode: str, title: str = "New chat", model: str = "",
                    system_prompt: str = "") -> Session:
        t = now()
        with self.store.write() as c:
            cur = c.execute("INSERT INTO sessions(title, mode, model, system_prompt, created, updated)"
                            " VALUES (?,?,?,?,?,?)", (title, mode, model, system_prompt, t, t))
            sid = cur.lastrowid
        return Session(sid, title, mode, model, system_prompt, t, t)

    def list_sessions(self, mode: str | None = None) -> list[Session]:
        sql = "SELECT * FROM sessions"
        args: tuple = ()
        if mode is not None:
            sql += " WHERE mode = ?"
            args = (mode,)
        rows = self.store.query(sql + " ORDER BY updated DESC, id DESC", args)
        return [_session(r) for r in rows]

    def get_session(self, id: int) -> Session | None:
        r = self.store.one("SELECT * FROM sessions WHERE id = ?", (id,))
        return _session(r) if r else None

    def rename_session(self, id: int, title: str) -> None:
        self._update_session(id, "title", title)

    def set_system_prompt(self, id: int, text: str) -> None:
        self._update_session(id, "system_prompt", text)

    def set_session_model(self, id: int, model: str) -> None:
        self._update_session(id, "model", model)

    def _update_session(self, id: int, col: str, value: str) -> None:
        with self.store.write() as c:
            n = c.execute(f"UPDATE sessions SET {col} = ?, updated = ? WHERE id = ?",
                          (value, now(), id)).rowcount
        if not n:
            raise MemoryError(f"no session {id}")

    def delete_session(self, id: int) -> None:
        with self.store.write() as c:
            mids = [r[0] for r in c.execute("SELECT id FROM messages WHERE session_id = ?", (id,))]
            n = c.execute("DELETE FROM sessions WHERE id = ?", (id,)).rowcount
        if not n:
            raise MemoryError(f"no session {id}")
        self._drop_vectors(messages=mids)

    # -- messages -----------------------------------------------------------------------------
    def add_message(self, session_id: int, role: str, text: str,
                    token_ids: Sequence[int] | None = None, mode: str = "", model: str = "",
                    stats: dict | None = None) -> Message:
        stats = dict(stats or {})
        t = now()
        with self.store.write() as c:
            srow = c.execute("SELECT mode, model FROM sessions WHERE id = ?",
                             (session_id,)).fetchone()
            if srow is None:
                raise MemoryError(f"no session {session_id}")
            mode = mode or srow["mode"]
            model = model or srow["model"]
            cur = c.execute(
                "INSERT INTO messages(session_id, role, text, token_ids, mode, model, stats,"
                " ttft_ms, ms_per_token, mean_accepted, created) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (session_id, role, text, pack_ids(token_ids), mode, model, dumps(stats),
                 _num(stats, "ttft_ms", "ttft"), _num(stats, "ms_per_token"),
                 _num(stats, "mean_accepted", "mean_accepted_per_step"), t))
            mid = cur.lastrowid
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (t, session_id))
        msg = Message(mid, session_id, role, text, [int(i) for i in token_ids or []], mode, model,
                      stats, t)
        self._sync_quietly()
        return msg

    def messages(self, session_id: int) -> list[Message]:
        rows = self.store.query("SELECT * FROM messages WHERE session_id = ? ORDER BY id",
                                (session_id,))
        return [_message(r) for r in rows]

    def get_message(self, message_id: int) -> Message | None:
        r = self.store.one("SELECT * FROM messages WHERE id = ?", (message_id,))
        return _message(r) if r else None

    def delete_message(self, message_id: int) -> None:
        with self.store.write() as c:
            c.execute("DELETE FROM messages WHERE id = ?", (message_id,))
        self._drop_vectors(messages=[message_id])

    def link_summary(self, message_id: int, doc_ids: list[int]) -> None:
        """Record that message ``message_id`` (a summary) was made from documents ``doc_ids``."""
        with self.store.write() as c:
            try:
                c.executemany("INSERT OR IGNORE INTO summary_links(message_id, doc_id) VALUES (?,?)",
                              [(message_id, int(d)) for d in doc_ids])
            except sqlite3.IntegrityError:
                raise MemoryError(f"cannot link message {message_id} to documents {doc_ids}: "
                                  f"unknown message or document") from None

    def summary_sources(self, message_id: int) -> list[Document]:
        rows = self.store.query(
            "SELECT d.* FROM documents d JOIN summary_links l ON l.doc_id = d.id "
            "WHERE l.message_id = ? ORDER BY d.id", (message_id,))
        return [_document(r) for r in rows]

    # -- documents ----------------------------------------------------------------------------
    def add_document(self, path: Path, progress: Progress | None = None,
                     session_id: int | None = None) -> Document:
        """Ingest one file. Raises ``DocumentError`` with a one-line reason when refused.

        The document and all its chunks are committed in one transaction (a crash leaves it
        complete or absent); vectors follow, reported through ``progress(done, total)``.
        """
        path = Path(path).expanduser()
        try:
            path = path.resolve()
        except OSError:
            pass
        ex = documents.extract(path, max_bytes=int(self.max_file_mb * 1024 * 1024))
        existing = self.store.one("SELECT * FROM documents WHERE sha256 = ?", (ex.sha256,))
        if existing is not None:
            if progress:
                progress(existing["n_chunks"], existing["n_chunks"])
            return _document(existing)
        chunks = chunking.chunk_text(ex.text, self.tokenizer, self.chunk_tokens,
                                     self.chunk_overlap)
        if not chunks:
            raise DocumentError(f"{path.name}: no text content (empty document)")
        total = len(chunks)
        last = [-1]
        if progress:
            user_progress = progress

            def progress(done: int, n: int) -> None:  # noqa: F811 - report each step once
                if done != last[0]:
                    last[0] = done
                    try:
                        user_progress(done, n)
                    except Exception as e:  # the caller's own error (e.g. cancel): re-raised
                        raise _CallbackError() from e

            progress(0, total)
        t = now()
        with self.store.write() as c:
            row = c.execute("SELECT * FROM documents WHERE sha256 = ?", (ex.sha256,)).fetchone()
            if row is not None:  # another process ingested the same content meanwhile
                doc = _document(row)
            else:
                if session_id is not None and c.execute(
                        "SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                    session_id = None
                cur = c.execute(
                    "INSERT INTO documents(path, name, sha256, kind, text, chars, n_chunks,"
                    " session_id, created) VALUES (?,?,?,?,?,?,?,?,?)",
                    (str(path), path.name, ex.sha256, ex.kind, ex.text, len(ex.text), total,
                     session_id, t))
                did = cur.lastrowid
                c.executemany(
                    "INSERT INTO chunks(doc_id, seq, start, end, tokens, text) VALUES (?,?,?,?,?,?)",
                    [(did, ch.seq, ch.start, ch.end, ch.tokens, ch.text) for ch in chunks])
                doc = Document(did, str(path), path.name, ex.sha256, total, len(ex.text), t,
                               session_id)
        self._sync_quietly(progress=progress, only_doc=doc.id)
        if progress:
            progress(total, total)
        return doc

    def get_document(self, doc_id: int) -> Document | None:
        r = self.store.one("SELECT * FROM documents WHERE id = ?", (doc_id,))
        return _document(r) if r else None

    def document_text(self, doc_id: int) -> str:
        text = self.store.scalar("SELECT text FROM documents WHERE id = ?", (doc_id,))
        if text is None:
            raise MemoryError(f"no document {doc_id}")
        return text

    def document_chunks(self, doc_id: int) -> list[str]:
        return [r[0] for r in self.store.query(
            "SELECT text FROM chunks WHERE doc_id = ? ORDER BY seq", (doc_id,))]

    def list_documents(self) -> list[Document]:
        return [_document(r) for r in self.store.query("SELECT * FROM documents ORDER BY id")]

    def delete_document(self, doc_id: int) -> None:
        with self.store.write() as c:
            cids = [r[0] for r in c.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]
            n = c.execute("DELETE FROM documents WHERE id = ?", (doc_id,)).rowcount
        if not n:
            raise MemoryError(f"no document {doc_id}")
        self._drop_vectors(chunks=cids)

    # -- retrieval ----------------------------------------------------------------------------
    def context_for(self, query: str, k: int = 4, token_budget: int = 512,
                    session_id: int | None = None,
                    kinds: Iterable[str] = ("message", "chunk")) -> list[ContextItem]:
        """The ``k`` most relevant past turns and document chunks for ``query``, best first,
        together within ``token_budget`` tokens (the last item may be cut to fit).

        ``session_id``: the conversation in progress; its own messages are left out (the agent
        already has them in the prompt). Documents are searched whatever session they came with.
        """
        kinds = tuple(kinds)
        if not query.strip() or k <= 0 or token_budget <= 0:
            return []
        vi = self._index()
        if vi is None:
            return []
        qv = self.embedder([query])[0]
        cands: list[ContextItem] = []
        try:
            if "chunk" in kinds:
                cands += self._chunk_hits(vi, qv, k * 3)
            if "message" in kinds:
                cands += self._turn_hits(vi, qv, k * 3, session_id)
        except Exception as e:  # a damaged index mid-session: repair on next use
            self._index_failed(e)
            return []
        cands.sort(key=lambda it: it.score, reverse=True)
        out, used, seen = [], 0, set()
        for it in cands:
            if len(out) >= k or used >= token_budget:
                break
            key = " ".join(it.text.split())
            if key in seen:
                continue
            seen.add(key)
            n = self.count_tokens(it.text)
            room = token_budget - used
            if n > room:
                if out and room < 32:
                    continue  # a later, shorter item may still fit
                it.text = self._cut(it.text, room)
                if not it.text:
                    continue
                n = self.count_tokens(it.text)
            it.tokens = n
            used += n
            out.append(it)
        return out

    def _chunk_hits(self, vi: VectorIndex, qv, n: int) -> list[ContextItem]:
        hits = vi.query("chunks", qv, n)
        if not hits:
            return []
        by_id = {parse_id(h[0]): h[1] for h in hits}
        rows = self.store.query(
            f"SELECT c.id, c.seq, c.text, d.name FROM chunks c JOIN documents d ON d.id = c.doc_id"
            f" WHERE c.id IN ({','.join('?' * len(by_id))})", list(by_id))
        return [ContextItem("chunk", r["text"], f"{r['name']} #{r['seq'] + 1}", by_id[r["id"]],
                            ref_id=r["id"]) for r in rows]

    def _turn_hits(self, vi: VectorIndex, qv, n: int, session_id: int | None) -> list[ContextItem]:
        where = {"session_id": {"$ne": int(session_id)}} if session_id is not None else None
        hits = vi.query("messages", qv, n, where=where)
        if not hits:
            return []
        by_id = {parse_id(h[0]): h[1] for h in hits}
        rows = self.store.query(
            f"SELECT id, session_id, role, text FROM messages WHERE id IN "
            f"({','.join('?' * len(by_id))})", list(by_id))
        turns: dict[int, ContextItem] = {}
        for r in rows:
            user, reply = self._turn_of(r)
            key = user["id"] if user else reply["id"]
            parts = []
            if user:
                parts.append(f"User: {user['text']}")
            if reply:
                parts.append(f"Assistant: {reply['text']}")
            score = by_id[r["id"]]
            if key not in turns or turns[key].score < score:
                turns[key] = ContextItem("message", "\n".join(parts), f"session {r['session_id']}",
                                         score, ref_id=key)
        return list(turns.values())

    def _turn_of(self, r) -> tuple[sqlite3.Row | None, sqlite3.Row | None]:
        """(user message, assistant reply) of the turn that message row ``r`` belongs to."""
        if r["role"] == "user":
            nxt = self.store.one("SELECT id, role, text FROM messages WHERE session_id = ? AND "
                                 "id > ? ORDER BY id LIMIT 1", (r["session_id"], r["id"]))
            return r, (nxt if nxt is not None and nxt["role"] == "assistant" else None)
        prev = self.store.one("SELECT id, role, text FROM messages WHERE session_id = ? AND "
                              "id < ? ORDER BY id DESC LIMIT 1", (r["session_id"], r["id"]))
        return (prev if prev is not None and prev["role"] == "user" else None), r

    def _cut(self, text: str, budget: int) -> str:
        """Longest word-boundary prefix of ``text`` within ``budget`` tokens."""
        if budget <= 0:
            return ""
        words = text.split(" ")

        def cut(n: int) -> str:
            return text if n >= len(words) else " ".join(words[:n]) + " …"

        lo, hi = 0, len(words)
        while lo < hi:  # binary search on the number of words kept
            mid = (lo + hi + 1) // 2
            if self.count_tokens(cut(mid)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return cut(lo) if lo else ""

    def drafting_sources(self, query: str, max_count: int = 8, max_tokens: int = 4096,
                         mode: str | None = None) -> list[list[int]]:
        """Token ids of past assistant responses whose requests are most similar to ``query``,
        best first; at most ``max_count`` sequences and ``max_tokens`` ids in all (the last
        sequence may be cut)."""
        if not query.strip() or max_count <= 0 or max_tokens <= 0:
            return []
        vi = self._index()
        if vi is None:
            return []
        qv = self.embedder([query])[0]
        try:
            hits = vi.query("responses", qv, max_count * 2, where={"mode": mode} if mode else None)
        except Exception as e:
            self._index_failed(e)
            return []
        if not hits:
            return []
        ids = [parse_id(h[0]) for h in hits]
        rows = {r["id"]: r["token_ids"] for r in self.store.query(
            f"SELECT id, token_ids FROM messages WHERE id IN ({','.join('?' * len(ids))})", ids)}
        out: list[list[int]] = []
        left, seen = max_tokens, set()
        for mid in ids:
            toks = unpack_ids(rows.get(mid))
            if not toks or tuple(toks) in seen:
                continue
            seen.add(tuple(toks))
            toks = toks[:left]
            out.append(toks)
            left -= len(toks)
            if len(out) >= max_count or left <= 0:
                break
        return out

    # -- export, stats ------------------------------------------------------------------------
    def export_session(self, id: int, fmt: str = "md") -> str:
        s = self.get_session(id)
        if s is None:
            raise MemoryError(f"no session {id}")
        msgs = self.messages(id)
        if fmt == "json":
            return json.dumps({
                "session": s.__dict__,
                "messages": [{**m.__dict__, "sources": [
                    {"id": d.id, "name": d.name} for d in self.summary_sources(m.id)]}
                    for m in msgs],
            }, ensure_ascii=False, indent=2)
        if fmt != "md":
            raise MemoryError(f"unknown export format {fmt!r} (use md or json)")
        lines = [f"# {s.title}", "",
                 f"- session: {s.id}", f"- mode: {s.mode or '-'}", f"- model: {s.model or '-'}",
                 f"- created: {_iso(s.created)}", f"- updated: {_iso(s.updated)}", ""]
        if s.system_prompt:
            lines += ["## System", "", s.system_prompt, ""]
        for m in msgs:
            lines += [f"## {m.role.capitalize()} · {_iso(m.created)}", "", m.text, ""]
            st = _stats_line(m.stats)
            if st:
                lines += [f"*{st}*", ""]
            srcs = self.summary_sources(m.id)
            if srcs:
                lines += ["Sources: " + ", ".join(d.name for d in srcs), ""]
        return "\n".join(lines).rstrip() + "\n"

    def stats(self) -> dict:
        q = self.store.scalar
        out = {
            "path": str(self.root),
            "schema_version": self.store.version(),
            "sessions": q("SELECT COUNT(*) FROM sessions"),
            "messages": q("SELECT COUNT(*) FROM messages"),
            "responses": q("SELECT COUNT(*) FROM messages WHERE role='assistant' AND "
                           "token_ids IS NOT NULL"),
            "documents": q("SELECT COUNT(*) FROM documents"),
            "chunks": q("SELECT COUNT(*) FROM chunks"),
            "pending_vectors": q("SELECT (SELECT COUNT(*) FROM messages WHERE embedded = 0) + "
                                 "(SELECT COUNT(*) FROM chunks WHERE embedded = 0)"),
            "db_bytes": sum(p.stat().st_size for p in self.root.glob("hexa.db*") if p.is_file()),
            "vector_bytes": _du(self.vectors.path),
        }
        avg = self.store.one("SELECT AVG(ttft_ms), AVG(ms_per_token), AVG(mean_accepted) "
                             "FROM messages WHERE role = 'assistant'")
        out["avg_ttft_ms"], out["avg_ms_per_token"], out["avg_mean_accepted"] = (
            None if v is None else round(float(v), 3) for v in avg)
        out["sessions_by_mode"] = {r[0] or "-": r[1] for r in self.store.query(
            "SELECT mode, COUNT(*) FROM sessions GROUP BY mode ORDER BY mode")}
        return out

    # -- maintenance --------------------------------------------------------------------------
    def reindex(self, progress: Progress | None = None) -> int:
        """Rebuild every vector from SQLite. Returns the number of vectors written."""
        with self._vlock:
            try:
                self.vectors.open()
                self.vectors.reset()
            except Exception as e:
                aside = self.vectors.discard()
                self.notice(f"vector index damaged ({_one_line(e)}); rebuilding from SQLite"
                            + (f" (old copy: {aside.name})" if aside else ""))
                self.vectors.open()
            self._mark_all_unembedded()
            n = self._sync(progress=progress)
            self._checked = True
            return n

    def wipe(self) -> None:
        """Delete every session, message and document, and every vector."""
        with self.store.write() as c:
            for table in ("summary_links", "chunks", "documents", "messages", "sessions"):
                c.execute(f"DELETE FROM {table}")
        with contextlib.suppress(sqlite3.Error):
            self.store.conn.execute("VACUUM")
        with self._vlock:
            try:
                self.vectors.reset()
            except Exception:
                self.vectors.discard()
            self._checked = True

    # -- vector index upkeep ------------------------------------------------------------------
    def _index(self) -> VectorIndex | None:
        """The vector index, opened, checked against SQLite and caught up; None if unusable."""
        with self._vlock:
            try:
                if not self._checked:
                    self._check_index()
                    self._checked = True
                self._sync()
                return self.vectors
            except MemoryError as e:  # e.g. embedding model missing
                self.notice(str(e))
                return None
            except Exception as e:
                self._index_failed(e)
                return None

    def _check_index(self) -> None:
        has_vectors = (self.store.scalar("SELECT EXISTS(SELECT 1 FROM messages WHERE embedded=1)"
                                         " OR EXISTS(SELECT 1 FROM chunks WHERE embedded=1)"))
        if not self.vectors.exists() and has_vectors:
            self.notice("vector index missing; rebuilding it from SQLite")
            self._mark_all_unembedded()
        try:
            self.vectors.open()
            present = {name: self.vectors.ids(name) for name in COLLECTIONS}
        except Exception as e:
            aside = self.vectors.discard()
            self.notice(f"vector index damaged ({_one_line(e)}); rebuilding it from SQLite"
                        + (f" (old copy: {aside.name})" if aside else ""))
            self._mark_all_unembedded()
            self.vectors.open()
            return
        expected = self._expected_ids()
        missing_m, missing_c = set(), set()
        for name in COLLECTIONS:
            gone = expected[name] - present[name]
            target = missing_c if name == "chunks" else missing_m
            target.update(parse_id(v) for v in gone)
            orphans = present[name] - expected[name] - self._pending_ids(name)
            if orphans:
                self.vectors.delete(name, ids=sorted(orphans))
        if missing_m or missing_c:
            self.notice(f"vector index incomplete ({len(missing_m) + len(missing_c)} items "
                        f"missing); re-indexing them from SQLite")
            with self.store.write() as c:
                _mark(c, "messages", missing_m, 0)
                _mark(c, "chunks", missing_c, 0)

    def _expected_ids(self) -> dict[str, set[str]]:
        return {
            "messages": {f"m{r[0]}" for r in self.store.query(
                "SELECT id FROM messages WHERE embedded = 1 AND role IN ('user', 'assistant')")},
            "responses": {f"r{r[0]}" for r in self.store.query(
                "SELECT id FROM messages WHERE embedded = 1 AND role = 'assistant' "
                "AND token_ids IS NOT NULL")},
            "chunks": {f"c{r[0]}" for r in self.store.query(
                "SELECT id FROM chunks WHERE embedded = 1")},
        }

    def _pending_ids(self, name: str) -> set[str]:
        table = "chunks" if name == "chunks" else "messages"
        return {f"{PREFIX[name]}{r[0]}" for r in self.store.query(
            f"SELECT id FROM {table} WHERE embedded = 0")}

    def _index_failed(self, e: Exception) -> None:
        self.notice(f"vector index unavailable ({_one_line(e)}); it will be checked and "
                    f"rebuilt on next use")
        self._checked = False
        with contextlib.suppress(Exception):
            self.vectors.close()

    def _mark_all_unembedded(self) -> None:
        with self.store.write() as c:
            c.execute("UPDATE messages SET embedded = 0")
            c.execute("UPDATE chunks SET embedded = 0")

    def _sync_quietly(self, progress: Progress | None = None, only_doc: int | None = None) -> None:
        """Write pending vectors after a commit; failures only leave rows pending."""
        try:
            with self._vlock:
                if not self._checked:
                    self._check_index()
                    self._checked = True
                self._sync(progress=progress, only_doc=only_doc)
        except _CallbackError as e:
            raise e.__cause__ from None  # saved; the vectors left pending are caught up later
        except MemoryError as e:
            self.notice(f"{e}; saved without vectors (run `hexa memory reindex` later)")
        except Exception as e:
            self._index_failed(e)

    def _sync(self, progress: Progress | None = None, only_doc: int | None = None) -> int:
        """Embed rows not yet in the index. Returns the number of vectors written."""
        written = 0
        msgs = self.store.query(
            "SELECT m.id, m.session_id, m.role, m.text, m.mode, m.token_ids IS NOT NULL AS has_ids,"
            " (SELECT u.text FROM messages u WHERE u.session_id = m.session_id AND u.id < m.id"
            "   ORDER BY u.id DESC LIMIT 1) AS prev_text,"
            " (SELECT u.role FROM messages u WHERE u.session_id = m.session_id AND u.id < m.id"
            "   ORDER BY u.id DESC LIMIT 1) AS prev_role"
            " FROM messages m WHERE m.embedded = 0 ORDER BY m.id")
        if only_doc is None:
            chunk_rows = self.store.query(
                "SELECT c.id, c.doc_id, c.text, d.session_id FROM chunks c JOIN documents d"
                " ON d.id = c.doc_id WHERE c.embedded = 0 ORDER BY c.id")
        else:  # the document being added first, so its progress bar means something
            chunk_rows = self.store.query(
                "SELECT c.id, c.doc_id, c.text, d.session_id FROM chunks c JOIN documents d"
                " ON d.id = c.doc_id WHERE c.embedded = 0 ORDER BY c.doc_id != ?, c.id",
                (only_doc,))
        total = len(msgs) + len(chunk_rows)
        if total == 0:
            return 0
        done = 0
        for i in range(0, len(msgs), EMBED_BATCH):
            batch = msgs[i:i + EMBED_BATCH]
            written += self._embed_messages(batch)
            done += len(batch)
            if progress and only_doc is None:
                progress(done, total)
        doc_total = sum(1 for r in chunk_rows if r["doc_id"] == only_doc)
        doc_done = 0
        for i in range(0, len(chunk_rows), EMBED_BATCH):
            batch = chunk_rows[i:i + EMBED_BATCH]
            vecs = self.embedder([r["text"] for r in batch])
            self.vectors.upsert(
                "chunks", [f"c{r['id']}" for r in batch], vecs, [r["text"] for r in batch],
                [{"doc_id": r["doc_id"], "session_id": r["session_id"] or 0} for r in batch])
            with self.store.write() as c:
                _mark(c, "chunks", [r["id"] for r in batch], 1)
            written += len(batch)
            done += len(batch)
            if progress:
                if only_doc is None:
                    progress(done, total)
                else:
                    doc_done += sum(1 for r in batch if r["doc_id"] == only_doc)
                    progress(min(doc_done, doc_total), doc_total)
        return written

    def _embed_messages(self, batch: Sequence[sqlite3.Row]) -> int:
        texts: dict[str, int] = {}  # distinct text -> position, each embedded once

        def slot(t: str) -> int:
            return texts.setdefault(t, len(texts))

        plan_m, plan_r = [], []
        for r in batch:
            if r["role"] in CONTEXT_ROLES and r["text"].strip():
                plan_m.append((r, slot(r["text"])))
            if r["role"] == "assistant" and r["has_ids"]:
                req = r["prev_text"] if r["prev_role"] == "user" and r["prev_text"] else r["text"]
                plan_r.append((r, slot(req), req))
        vecs = self.embedder(list(texts)) if texts else []
        if plan_m:
            self.vectors.upsert(
                "messages", [f"m{r['id']}" for r, _ in plan_m], [vecs[j] for _, j in plan_m],
                [r["text"] for r, _ in plan_m],
                [{"session_id": r["session_id"], "role": r["role"], "mode": r["mode"]}
                 for r, _ in plan_m])
        if plan_r:
            self.vectors.upsert(
                "responses", [f"r{r['id']}" for r, _, _ in plan_r], [vecs[j] for _, j, _ in plan_r],
                [q for _, _, q in plan_r],
                [{"session_id": r["session_id"], "mode": r["mode"]} for r, _, _ in plan_r])
        with self.store.write() as c:
            _mark(c, "messages", [r["id"] for r in batch], 1)
        return len(plan_m) + len(plan_r)

    def _drop_vectors(self, messages: Sequence[int] = (), chunks: Sequence[int] = ()) -> None:
        """Best effort: an orphan vector left behind is ignored by queries and cleaned later."""
        if not messages and not chunks:
            return
        if not self.vectors.is_open and not self.vectors.exists():
            return
        try:
            with self._vlock:
                if messages:
                    self.vectors.delete("messages", ids=[f"m{i}" for i in messages])
                    self.vectors.delete("responses", ids=[f"r{i}" for i in messages])
                if chunks:
                    self.vectors.delete("chunks", ids=[f"c{i}" for i in chunks])
        except Exception as e:
            self._index_failed(e)


class _CallbackError(Exception):
    """Wraps an exception raised by a caller's progress callback."""


# -- row conversion -----------------------------------------------------------------------------
def _session(r) -> Session:
    return Session(r["id"], r["title"], r["mode"], r["model"], r["system_prompt"], r["created"],
                   r["updated"])


def _message(r) -> Message:
    try:
        stats = json.loads(r["stats"] or "{}")
    except ValueError:
        stats = {}
    return Message(r["id"], r["session_id"], r["role"], r["text"], unpack_ids(r["token_ids"]),
                   r["mode"], r["model"], stats, r["created"])


def _document(r) -> Document:
    return Document(r["id"], r["path"], r["name"], r["sha256"], r["n_chunks"], r["chars"],
                    r["created"], r["session_id"])


def _mark(c: sqlite3.Connection, table: str, ids: Iterable[int], value: int) -> None:
    ids = list(ids)
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        c.execute(f"UPDATE {table} SET embedded = ? WHERE id IN ({','.join('?' * len(part))})",
                  [value, *part])


def _num(d: dict, *keys: str) -> float | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _stats_line(st: dict) -> str:
    parts = []
    if isinstance(st.get("ttft_ms"), (int, float)):
        parts.append(f"TTFT {st['ttft_ms']:.0f} ms")
    if isinstance(st.get("ms_per_token"), (int, float)):
        parts.append(f"{st['ms_per_token']:.1f} ms/token")
    if isinstance(st.get("mean_accepted"), (int, float)):
        parts.append(f"{st['mean_accepted']:.2f} accepted/step")
    return " · ".join(parts)


def _du(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _one_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0]}" if s else type(e).__name__
