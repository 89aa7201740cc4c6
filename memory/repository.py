"""SQL for sessions, messages, documents and chunks, and the conversion of rows to records.

Every change is one transaction on the ``Store``. The vector index is not this module's business,
with one exception that must share the transaction: a change to what a row's vectors are made of
marks the rows concerned ``embedded = 0``, so the index catches up even after a crash.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

from .chunking import Chunk
from .documents import Extracted
from .errors import StoreError
from .models import Document, Message, ResponseStats, SentContext, Session
from .store import Store, now, pack_ids, unpack_ids

UNCHANGED = object()  # "leave this column as it is" where None already means "clear it"
SESSION_COLUMNS = ("title", "mode", "model", "system_prompt")


class Repository:
    def __init__(self, store: Store):
        self.store = store

    # -- sessions -----------------------------------------------------------------------------
    def new_session(self, mode: str, title: str, model: str, system_prompt: str) -> Session:
        t = now()
        with self.store.write() as c:
            cur = c.execute("INSERT INTO sessions(title, mode, model, system_prompt, created,"
                            " updated) VALUES (?,?,?,?,?,?)",
                            (title, mode, model, system_prompt, t, t))
        return Session(cur.lastrowid, title, mode, model, system_prompt, t, t)

    def list_sessions(self, mode: str | None = None) -> list[Session]:
        where, args = ("WHERE mode = ?", (mode,)) if mode is not None else ("", ())
        rows = self.store.query(f"SELECT * FROM sessions {where} ORDER BY updated DESC, id DESC",
                                args)
        return [_session(r) for r in rows]

    def get_session(self, id: int) -> Session | None:
        r = self.store.one("SELECT * FROM sessions WHERE id = ?", (id,))
        return _session(r) if r else None

    def session(self, id: int) -> Session:
        """The session ``id``; ``StoreError`` when there is none."""
        s = self.get_session(id)
        if s is None:
            raise StoreError(f"no session {id}")
        return s

    def update_session(self, id: int, column: str, value: str) -> None:
        assert column in SESSION_COLUMNS  # a column name cannot be a query parameter
        with self.store.write() as c:
            n = c.execute(f"UPDATE sessions SET {column} = ?, updated = ? WHERE id = ?",
                          (value, now(), id)).rowcount
        if not n:
            raise StoreError(f"no session {id}")

    def set_session_retrieval(self, id: int, on: bool | None) -> None:
        with self.store.write() as c:
            n = c.execute("UPDATE sessions SET retrieval = ? WHERE id = ?",
                          (None if on is None else int(bool(on)), id)).rowcount
        if not n:
            raise StoreError(f"no session {id}")

    def delete_session(self, id: int) -> list[int]:
        """Delete a session and its messages; returns the ids of the messages deleted."""
        with self.store.write() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM messages WHERE session_id = ?", (id,))]
            n = c.execute("DELETE FROM sessions WHERE id = ?", (id,)).rowcount
        if not n:
            raise StoreError(f"no session {id}")
        return ids

    # -- messages -----------------------------------------------------------------------------
    def add_message(self, session_id: int, role: str, text: str, token_ids: Sequence[int] | None,
                    mode: str, model: str, stats: ResponseStats | dict | None,
                    context: SentContext | None = None) -> Message:
        t = now()
        stats = _typed(stats)
        with self.store.write() as c:
            srow = c.execute("SELECT mode, model FROM sessions WHERE id = ?",
                             (session_id,)).fetchone()
            if srow is None:
                raise StoreError(f"no session {session_id}")
            mode = mode or srow["mode"]  # a message inherits what it does not say
            model = model or srow["model"]
            cur = c.execute(
                "INSERT INTO messages(session_id, role, text, token_ids, mode, model, stats,"
                " ttft_ms, ms_per_token, mean_accepted, created, context)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (session_id, role, text, pack_ids(token_ids), mode, model, *_stats_columns(stats),
                 t, context.to_json() if context is not None else ""))
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (t, session_id))
        return Message(cur.lastrowid, session_id, role, text, [int(i) for i in token_ids or []],
                       mode, model, stats, t, context)

    def update_message(self, message_id: int, text: str | None = None,
                       token_ids: Sequence[int] | None | object = UNCHANGED,
                       stats: ResponseStats | dict | None = None) -> None:
        """Change a message in place and mark its vectors (and those of the reply that was
        embedded by its text) for rewriting."""
        columns: dict[str, object] = {}
        if text is not None:
            columns["text"] = text
        if token_ids is not UNCHANGED:
            columns["token_ids"] = pack_ids(token_ids)
        if stats is not None:
            columns.update(zip(("stats", "ttft_ms", "ms_per_token", "mean_accepted"),
                               _stats_columns(_typed(stats))))
        with self.store.write() as c:
            row = c.execute("SELECT session_id FROM messages WHERE id = ?",
                            (message_id,)).fetchone()
            if row is None:
                raise StoreError(f"no message {message_id}")
            sets = "".join(f"{name} = ?, " for name in columns)
            c.execute(f"UPDATE messages SET {sets}embedded = 0 WHERE id = ?",
                      (*columns.values(), message_id))
            if text is not None:  # the next reply's drafting-source vector is this text's
                c.execute("UPDATE messages SET embedded = 0 WHERE id = (SELECT id FROM messages"
                          " WHERE session_id = ? AND id > ? ORDER BY id LIMIT 1)",
                          (row["session_id"], message_id))
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now(), row["session_id"]))

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

    def link_summary(self, message_id: int, doc_ids: Iterable[int]) -> None:
        doc_ids = [int(d) for d in doc_ids]
        with self.store.write() as c:
            try:
                c.executemany("INSERT OR IGNORE INTO summary_links(message_id, doc_id)"
                              " VALUES (?,?)", [(message_id, d) for d in doc_ids])
            except sqlite3.IntegrityError:
                raise StoreError(f"cannot link message {message_id} to documents {doc_ids}: "
                                 f"unknown message or document") from None

    def summary_sources(self, message_id: int) -> list[Document]:
        rows = self.store.query(
            "SELECT d.* FROM documents d JOIN summary_links l ON l.doc_id = d.id "
            "WHERE l.message_id = ? ORDER BY d.id", (message_id,))
        return [_document(r) for r in rows]

    # -- documents ----------------------------------------------------------------------------
    def document_by_hash(self, sha256: str) -> Document | None:
        r = self.store.one("SELECT * FROM documents WHERE sha256 = ?", (sha256,))
        return _document(r) if r else None

    def add_document(self, path: Path, extracted: Extracted, chunks: Sequence[Chunk],
                     session_id: int | None) -> tuple[Document, bool]:
        """Store a document with all its chunks in one transaction (a crash leaves it complete or
        absent). Returns (document, True), or (the stored one, False) when the same content was
        stored meanwhile by another process."""
        t = now()
        with self.store.write() as c:
            row = c.execute("SELECT * FROM documents WHERE sha256 = ?",
                            (extracted.sha256,)).fetchone()
            if row is not None:
                return _document(row), False
            if session_id is not None and c.execute(  # a session deleted meanwhile: no link
                    "SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                session_id = None
            cur = c.execute(
                "INSERT INTO documents(path, name, sha256, kind, text, chars, n_chunks,"
                " session_id, created) VALUES (?,?,?,?,?,?,?,?,?)",
                (str(path), path.name, extracted.sha256, extracted.kind, extracted.text,
                 len(extracted.text), len(chunks), session_id, t))
            doc_id = cur.lastrowid
            c.executemany(
                "INSERT INTO chunks(doc_id, seq, start, end, tokens, text) VALUES (?,?,?,?,?,?)",
                [(doc_id, ch.seq, ch.start, ch.end, ch.tokens, ch.text) for ch in chunks])
        return Document(doc_id, str(path), path.name, extracted.sha256, len(chunks),
                        len(extracted.text), t, session_id), True

    def get_document(self, doc_id: int) -> Document | None:
        r = self.store.one("SELECT * FROM documents WHERE id = ?", (doc_id,))
        return _document(r) if r else None

    def document_text(self, doc_id: int) -> str:
        text = self.store.scalar("SELECT text FROM documents WHERE id = ?", (doc_id,))
        if text is None:
            raise StoreError(f"no document {doc_id}")
        return text

    def document_chunks(self, doc_id: int) -> list[str]:
        return [r[0] for r in self.store.query(
            "SELECT text FROM chunks WHERE doc_id = ? ORDER BY seq", (doc_id,))]

    def list_documents(self) -> list[Document]:
        return [_document(r) for r in self.store.query("SELECT * FROM documents ORDER BY id")]

    def delete_document(self, doc_id: int) -> list[int]:
        """Delete a document and its chunks (its summary links go with it); returns the ids of
        the chunks deleted."""
        with self.store.write() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]
            n = c.execute("DELETE FROM documents WHERE id = ?", (doc_id,)).rowcount
        if not n:
            raise StoreError(f"no document {doc_id}")
        return ids

    # -- everything ---------------------------------------------------------------------------
    def wipe(self) -> None:
        with self.store.write() as c:
            for table in ("summary_links", "chunks", "documents", "episodes", "messages", "sessions"):
                c.execute(f"DELETE FROM {table}")
        self.store.vacuum()


# -- row conversion -----------------------------------------------------------------------------
def _session(r: sqlite3.Row) -> Session:
    on = r["retrieval"]
    return Session(r["id"], r["title"], r["mode"], r["model"], r["system_prompt"], r["created"],
                   r["updated"], None if on is None else bool(on))


def _message(r: sqlite3.Row) -> Message:
    try:
        stats = json.loads(r["stats"] or "{}")
    except ValueError:
        stats = {}
    return Message(r["id"], r["session_id"], r["role"], r["text"], unpack_ids(r["token_ids"]),
                   r["mode"], r["model"], ResponseStats.from_dict(stats if isinstance(stats, dict) else {}),
                   r["created"], SentContext.from_json(r["context"]))


def _typed(stats: ResponseStats | dict | None) -> ResponseStats | None:
    return stats if isinstance(stats, ResponseStats) or stats is None else ResponseStats.from_dict(stats)


def _document(r: sqlite3.Row) -> Document:
    return Document(r["id"], r["path"], r["name"], r["sha256"], r["n_chunks"], r["chars"],
                    r["created"], r["session_id"])


def _stats_columns(stats: ResponseStats | None) -> tuple:
    """(stats JSON, ttft_ms, ms_per_token, mean_accepted): the figures are copied into columns
    for ``stats()``'s averages."""
    if stats is None:
        return "{}", None, None, None
    return (stats.to_json(), stats.ttft_ms, stats.ms_per_token or None,
            stats.mean_accepted or None)
