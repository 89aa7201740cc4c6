"""SQLite store: the source of truth for sessions, messages, documents and chunks.

One connection per ``Store`` in WAL mode; several processes (the TUI and a CLI command) may open
the same file at once: writers take the lock with ``BEGIN IMMEDIATE`` and wait up to
``busy_timeout``. Every multi-row change is one transaction, so a crash or ``kill -9`` loses at most
the transaction in flight. The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS[i]``
upgrades version ``i`` to ``i + 1``.
"""
from __future__ import annotations

import array
import contextlib
import json
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

from .errors import StoreError

MIGRATIONS: list[str] = [
    # 0 -> 1: initial schema
    """
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL DEFAULT 'New chat',
        mode TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        system_prompt TEXT NOT NULL DEFAULT '',
        created REAL NOT NULL,
        updated REAL NOT NULL
    );
    CREATE INDEX sessions_updated ON sessions(updated DESC);

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        text TEXT NOT NULL,
        token_ids BLOB,                 -- little-endian int32 array, assistant replies
        mode TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        stats TEXT NOT NULL DEFAULT '{}',
        ttft_ms REAL,                   -- copied from stats for aggregates
        ms_per_token REAL,
        mean_accepted REAL,
        created REAL NOT NULL,
        embedded INTEGER NOT NULL DEFAULT 0   -- 1 once its vectors are written
    );
    CREATE INDEX messages_session ON messages(session_id, id);
    CREATE INDEX messages_embedded ON messages(embedded);

    CREATE TABLE documents (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL,
        name TEXT NOT NULL,
        sha256 TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        chars INTEGER NOT NULL,
        n_chunks INTEGER NOT NULL,
        session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
        created REAL NOT NULL
    );

    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        start INTEGER NOT NULL,
        end INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        text TEXT NOT NULL,
        embedded INTEGER NOT NULL DEFAULT 0,
        UNIQUE (doc_id, seq)
    );
    CREATE INDEX chunks_embedded ON chunks(embedded);

    CREATE TABLE summary_links (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        PRIMARY KEY (message_id, doc_id)
    );
    """,
    # 1 -> 2: UI-agent episodes. An episode is an "agent" session (its user message is the task,
    # one assistant message per action, so history, export and drafting sources work as for
    # chats); this row adds what a chat does not have: the device, the outcome and the screens.
    """
    CREATE TABLE episodes (
        session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        task TEXT NOT NULL,
        device TEXT NOT NULL DEFAULT '',
        outcome TEXT NOT NULL DEFAULT 'running',  -- done | step_limit | loop | stopped | error | ...
        success INTEGER,                -- 1/0 when checked on the device's state, NULL when unknown
        steps TEXT NOT NULL DEFAULT '[]',   -- JSON: [{screen, app, action, element, ...}]
        created REAL NOT NULL,
        updated REAL NOT NULL
    );
    CREATE INDEX episodes_success ON episodes(success, outcome);
    """,
    # 2 -> 3: the UI agent's knowledge of apps (a UI transition graph per package, written by
    # exploration and by verified episode steps), and an embedding cache for short texts (its
    # edges' descriptions, tasks), so a graph is searched without re-embedding anything.
    """
    CREATE TABLE ui_screens (
        id INTEGER PRIMARY KEY,
        package TEXT NOT NULL,
        data TEXT NOT NULL,             -- JSON: the abstract screen (agents.ui.graph.UIScreen)
        updated REAL NOT NULL
    );
    CREATE INDEX ui_screens_package ON ui_screens(package);
    CREATE TABLE ui_edges (
        id INTEGER PRIMARY KEY,
        package TEXT NOT NULL,
        src INTEGER NOT NULL REFERENCES ui_screens(id) ON DELETE CASCADE,
        data TEXT NOT NULL,             -- JSON: the edge (agents.ui.graph.UIEdge)
        updated REAL NOT NULL
    );
    CREATE INDEX ui_edges_package ON ui_edges(package);
    CREATE TABLE ui_apps (
        package TEXT PRIMARY KEY,
        home INTEGER,                   -- the screen the app opens on
        data TEXT NOT NULL DEFAULT '{}',   -- JSON: exploration's bookkeeping (actions spent, ...)
        updated REAL NOT NULL
    );
    CREATE TABLE text_vectors (
        text TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        vector BLOB NOT NULL            -- little-endian float32
    );
    """,
    # 3 -> 4 (retrieval: what was sent): a user message's retrieved context gets its own column,
    # JSON {"text": what the prompt held, "items": [ContextItem...]} ('' for none; models.SentContext);
    # it lived in the metrics JSON under "retrieved_context", read back by a string key. Rows from
    # v3 keep their text (no items: what it was made of was not recorded). A session may switch
    # retrieval off or on for itself (NULL: the setting decides).
    """
    ALTER TABLE messages ADD COLUMN context TEXT NOT NULL DEFAULT '';
    UPDATE messages SET context = json_object('text', json_extract(stats, '$.retrieved_context'),
                                              'items', json('[]'))
        WHERE json_valid(stats) AND json_type(stats, '$.retrieved_context') = 'text'
          AND json_extract(stats, '$.retrieved_context') <> '';
    UPDATE messages SET stats = json_remove(stats, '$.retrieved_context')
        WHERE json_valid(stats) AND json_type(stats, '$.retrieved_context') IS NOT NULL;
    ALTER TABLE sessions ADD COLUMN retrieval INTEGER;
    """,
    # 4 -> 5: the embeddings of the vector index, so it is rebuilt without re-embedding and small
    # collections are searched exactly (memory/stored.py); filled from chromadb once for an
    # older store (indexing.IndexKeeper's backfill, flagged in vector_state).
    """
    CREATE TABLE vectors (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- grows with every write
        vid TEXT NOT NULL UNIQUE,       -- the chromadb id: m<message>, r<message>, c<chunk>
        collection TEXT NOT NULL,
        text_key TEXT NOT NULL,         -- hash of the text embedded
        meta TEXT NOT NULL DEFAULT '{}',   -- JSON: the metadata chromadb holds
        vector BLOB NOT NULL            -- little-endian float32
    );
    CREATE INDEX vectors_collection ON vectors(collection, seq);
    CREATE TABLE vector_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


def pack_ids(ids: Sequence[int] | None) -> bytes | None:
    if not ids:
        return None
    arr = array.array("i", (int(i) for i in ids))
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


def unpack_ids(blob: bytes | None) -> list[int]:
    if not blob:
        return []
    arr = array.array("i")
    arr.frombytes(blob)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tolist()


class Store:
    """Thin, thread-safe wrapper over one SQLite connection."""

    def __init__(self, path: Path, busy_timeout_s: float = 15.0):
        self.path = Path(path)
        self._lock = threading.RLock()  # the one connection: every statement goes through it
        _check_writable(self.path)
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=busy_timeout_s,
                                        isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open memory store {self.path}: {e}") from None
        self.conn.row_factory = sqlite3.Row
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"memory store {self.path}: cannot enable WAL (got {mode})")
            self.conn.execute("PRAGMA synchronous = NORMAL")  # durable against process crashes
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except StoreError:
            self.conn.close()
            raise
        except sqlite3.DatabaseError as e:
            self.conn.close()
            if "readonly" in str(e):
                raise StoreError(f"memory store {self.path} is read-only ({e})") from None
            raise StoreError(f"memory store {self.path} is unreadable: {e}") from None

    # -- transactions -------------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE: takes the write lock up front, waits if busy)."""
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence | dict = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence | dict = ()) -> sqlite3.Row | None:
        with self._lock:
            return self.conn.execute(sql, params).fetchone()

    def scalar(self, sql: str, params: Sequence | dict = ()):
        row = self.one(sql, params)
        return None if row is None else row[0]

    # -- schema -------------------------------------------------------------------------------
    def version(self) -> int:
        return int(self.scalar("PRAGMA user_version"))

    def _migrate(self) -> None:
        if self.version() == SCHEMA_VERSION:
            return
        with self.write() as c:  # re-read under the write lock: another process may have won
            v = int(c.execute("PRAGMA user_version").fetchone()[0])
            if v > SCHEMA_VERSION:
                raise StoreError(f"memory store {self.path} has schema v{v}, newer than this "
                                  f"hexa understands (v{SCHEMA_VERSION}); upgrade hexa")
            for i in range(v, SCHEMA_VERSION):
                for stmt in _split_sql(MIGRATIONS[i]):
                    c.execute(stmt)
                c.execute(f"PRAGMA user_version = {i + 1}")

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the disk, under the same lock as every write."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):  # busy elsewhere: the space is reused anyway
                self.conn.execute("VACUUM")

    def integrity_ok(self) -> bool:
        return self.scalar("PRAGMA integrity_check") == "ok"

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("PRAGMA optimize")
            self.conn.close()


def _check_writable(db: Path) -> None:
    """Name what cannot be written: SQLite itself would only say "unable to open database file"
    or "attempt to write a readonly database", or fail later on the first write."""
    folder = db.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = e.strerror or str(e)
        raise StoreError(f"cannot create memory folder {folder} ({reason}; read-only?)") from None
    if not os.access(folder, os.W_OK | os.X_OK):  # WAL needs to create files beside the database
        raise StoreError(f"memory folder {folder} is not writable (read-only?)")
    if db.exists() and not os.access(db, os.W_OK):
        raise StoreError(f"memory store {db} is not writable (read-only?)")


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements (executescript would commit our transaction)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def now() -> float:
    return time.time()


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)
