"""chromadb vector index (derived data: SQLite is the source of truth, this can be rebuilt).

Three collections with cosine distance:
  ``messages``  id ``m<message id>``  user/assistant message text
  ``chunks``    id ``c<chunk id>``    document chunk text
  ``responses`` id ``r<message id>``  an assistant reply with token ids, embedded by its *request*
Embeddings are computed by our ``Embedder`` and passed explicitly, so chromadb never loads (or
downloads) a model of its own. Telemetry is off.

Several processes may use the index (the TUI and a CLI command). chromadb caches index state per
process, so: writes are serialised with an advisory file lock next to the index, every write bumps
a generation number in ``vectors.gen``, and a process that sees another's generation reopens its
client before reading or writing (about 60 ms, only after another process wrote).
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Iterator, Sequence

from .embeddings import Embedder
from .errors import StoreError

COLLECTIONS = ("messages", "chunks", "responses")
PREFIX = {"messages": "m", "chunks": "c", "responses": "r"}
BATCH = 256

log = logging.getLogger(__name__)


def _quiet_chroma() -> None:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    for name in ("chromadb", "chromadb.telemetry", "chromadb.telemetry.product.posthog"):
        logging.getLogger(name).setLevel(logging.ERROR)


class VectorIndex:
    def __init__(self, path: Path, embedder: Embedder):
        self.path = Path(path)
        self.embedder = embedder
        self._client = None
        self._cols: dict[str, object] = {}
        # one thread at a time uses the client: a reopen (_fresh) must not close it under another
        self._tlock = threading.RLock()
        self._depth = 0
        self._gen = None           # generation our client reflects
        self._gen_file = self.path.parent / "vectors.gen"
        self.stored = None  # stored.StoredVectors when the embeddings are kept in SQLite

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self._client is not None

    def exists(self) -> bool:
        return self.path.is_dir() and any(self.path.iterdir())

    def open(self) -> None:
        """Open (creating if needed) the index; raises on a damaged index."""
        if self._client is not None:
            return
        _quiet_chroma()
        import chromadb
        from chromadb.config import Settings

        self.path.mkdir(parents=True, exist_ok=True)
        with self.locked():
            _check_catalog(self.path / "chroma.sqlite3")
            client = None
            try:
                client = chromadb.PersistentClient(
                    path=str(self.path),
                    settings=Settings(anonymized_telemetry=False, allow_reset=True))
                cols = {}
                for name in COLLECTIONS:
                    cols[name] = client.get_or_create_collection(
                        name, metadata={"hnsw:space": "cosine"}, embedding_function=None)
                for c in cols.values():  # touch each: a damaged segment fails here, not later
                    c.count()
                    c.peek(1)
            except BaseException:
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()
                else:
                    _forget_failed_start()
                raise
            self._gen = self._read_gen()
        self._client, self._cols = client, cols
        _clients.add(self)

    def close(self) -> None:
        with self._tlock:
            if self._client is None:
                return
            client, self._client, self._cols = self._client, None, {}
            _clients.discard(self)
            try:
                client.close()  # releases chromadb's cached per-path system (refcounted)
            except Exception as e:  # the system stays cached until the process ends
                log.warning("closing the vector index failed: %s", e)

    def _read_gen(self) -> int:
        try:
            return int(self._gen_file.read_text() or 0)
        except (OSError, ValueError):
            return 0

    def _bump_gen(self) -> None:
        """Under the lock, after a write: tell other processes their view is stale."""
        g = self._read_gen() + 1
        tmp = self._gen_file.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(str(g))
        os.replace(tmp, self._gen_file)
        self._gen = g

    def _fresh(self) -> None:
        """Reopen if another process wrote since our client last looked."""
        if self._client is not None and self._read_gen() != self._gen:
            self.close()
        self.open()

    def discard(self) -> Path | None:
        """Move a damaged index aside (kept for inspection) so a fresh one can be built."""
        self.close()
        if not self.path.exists():
            return None
        aside = self.path.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            self.path.rename(aside)
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)
            return None
        # keep only the latest broken copy
        for old in self.path.parent.glob(f"{self.path.name}.broken-*"):
            if old != aside:
                shutil.rmtree(old, ignore_errors=True)
        return aside

    def reset(self) -> None:
        """Empty every collection (recreating them)."""
        with self.locked():
            self._fresh()
            self._bump_gen()
            for name in COLLECTIONS:
                with contextlib.suppress(Exception):
                    self._client.delete_collection(name)
                self._cols[name] = self._client.get_or_create_collection(
                    name, metadata={"hnsw:space": "cosine"}, embedding_function=None)
            self._bump_gen()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock across threads and processes for index writes (re-entrant)."""
        with self._tlock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(str(self.path.parent / "vectors.lock"), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._depth = 1
                yield
            finally:
                self._depth = 0
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    # -- operations ---------------------------------------------------------------------------
    def col(self, name: str):
        self._fresh()
        return self._cols[name]

    def upsert(self, name: str, ids: Sequence[str], embeddings: Sequence[Sequence[float]],
               documents: Sequence[str], metadatas: Sequence[dict]) -> None:
        with self.locked():
            c = self.col(name)
            self._bump_gen()  # before writing: a crash mid-write still invalidates others' views
            for i in range(0, len(ids), BATCH):
                c.upsert(ids=list(ids[i:i + BATCH]),
                         embeddings=[list(e) for e in embeddings[i:i + BATCH]],
                         documents=list(documents[i:i + BATCH]),
                         metadatas=list(metadatas[i:i + BATCH]))
            self._bump_gen()

    def delete(self, name: str, ids: Sequence[str] | None = None, where: dict | None = None) -> None:
        with self.locked():
            c = self.col(name)
            self._bump_gen()
            if ids:
                for i in range(0, len(ids), BATCH):
                    # chromadb logs a delete for every id given, stored or not (15,000 ids of a
                    # document cancelled early: 1.4 s); asking which exist first takes 0.1 s
                    there = c.get(ids=list(ids[i:i + BATCH]), include=[])["ids"]
                    if there:
                        c.delete(ids=there)
            elif where:
                c.delete(where=where)
            self._bump_gen()

    def ids(self, name: str) -> set[str]:
        out: set[str] = set()
        with self._tlock:
            c = self.col(name)
            for off in range(0, c.count(), 5000):
                out.update(c.get(include=[], limit=5000, offset=off)["ids"])
        return out

    def count(self, name: str) -> int:
        with self._tlock:
            return self.col(name).count()

    def query(self, name: str, embedding: Sequence[float], n: int,
              where: dict | None = None) -> list[tuple[str, float, dict]]:
        """Nearest ``n`` items: (id, cosine similarity, metadata), best first. A collection small
        enough (``stored.EXACT_MAX``) is searched exactly over the stored embeddings: as fast,
        and immune to a damaged HNSW graph."""
        st = self.stored
        if st is not None and n > 0 and st.is_ready():
            from .stored import EXACT_MAX

            if st.count(name) <= EXACT_MAX:
                found = st.exact_query(name, embedding, n, where)
                if found is not None:
                    return found
        with self._tlock:
            c = self.col(name)
            total = c.count()
            if total == 0 or n <= 0:
                return []
            kw = {"where": where} if where else {}
            res = c.query(query_embeddings=[list(embedding)], n_results=min(n, total),
                          include=["distances", "metadatas"], **kw)
        ids = res["ids"][0]
        dists = res["distances"][0]
        metas = res["metadatas"][0] or [{}] * len(ids)
        return [(i, 1.0 - float(d), m or {}) for i, d, m in zip(ids, dists, metas)]


# VectorIndex objects whose chromadb client is open in this process (see _forget_failed_start)
_clients: weakref.WeakSet = weakref.WeakSet()


def _check_catalog(db: Path) -> None:
    """Raise on a catalog that is not a SQLite database before chromadb starts on it: a failed
    start leaves a broken system cached for the path (see _forget_failed_start). Opened
    read-write (never created): a writer killed mid-transaction leaves a hot rollback journal, which
    a read-only connection cannot roll back (SQLITE_READONLY_ROLLBACK, "attempt to write a readonly
    database") — that is an interrupted write to undo, as chromadb's own connection would, not
    damage."""
    if not db.is_file():
        return
    con = sqlite3.connect(f"{db.as_uri()}?mode=rw", uri=True, timeout=15)  # waits on a writer
    try:
        con.execute("PRAGMA schema_version").fetchone()
    finally:
        con.close()


def _forget_failed_start() -> None:
    """chromadb (1.5.9) keeps the system of a client that failed to start cached for its path, and
    the next client for that path would reuse it, broken. No public call drops one path's system;
    the public ``clear_system_cache()`` forgets every path's without stopping them, which is only
    safe while no other client of this process is open, so it is called only then (otherwise the
    index stays unusable until the process ends; the damaged folder is moved aside meanwhile)."""
    if len(_clients) == 0:
        from chromadb.api.client import Client

        Client.clear_system_cache()


def parse_id(vid: str) -> int:
    try:
        return int(vid[1:])
    except ValueError:
        raise StoreError(f"bad vector id {vid!r}") from None
