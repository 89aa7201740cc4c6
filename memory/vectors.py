"""chromadb vector index (derived data: SQLite is the source of truth, this can be rebuilt).

Three collections with cosine distance:
  ``messages``  id ``m<message id>``  user/assistant message text
  ``chunks``    id ``c<chunk id>``    document chunk text
  ``responses`` id ``r<message id>``  an assistant reply with token ids, embedded by its *request*
Embeddings are computed by our ``Embedder`` and passed explicitly, so chromadb never loads (or
downloads) a model of its own. Telemetry is off. Writes from several processes are serialised
with an advisory file lock next to the index.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

from .embeddings import Embedder
from .errors import MemoryError

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
        self._tlock = threading.RLock()

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
        self._client, self._cols = client, cols

    def close(self) -> None:
        if self._client is None:
            return
        client, self._client, self._cols = self._client, None, {}
        with contextlib.suppress(Exception):
            client.clear_system_cache()  # drop chromadb's per-path cached system

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
        self.open()
        with self.locked():
            for name in COLLECTIONS:
                with contextlib.suppress(Exception):
                    self._client.delete_collection(name)
                self._cols[name] = self._client.get_or_create_collection(
                    name, metadata={"hnsw:space": "cosine"}, embedding_function=None)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock across threads and processes for index writes."""
        with self._tlock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(str(self.path.parent / "vectors.lock"), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    # -- operations ---------------------------------------------------------------------------
    def col(self, name: str):
        self.open()
        return self._cols[name]

    def upsert(self, name: str, ids: Sequence[str], embeddings: Sequence[Sequence[float]],
               documents: Sequence[str], metadatas: Sequence[dict]) -> None:
        c = self.col(name)
        with self.locked():
            for i in range(0, len(ids), BATCH):
                c.upsert(ids=list(ids[i:i + BATCH]), embeddings=[list(e) for e in embeddings[i:i + BATCH]],
                         documents=list(documents[i:i + BATCH]),
                         metadatas=list(metadatas[i:i + BATCH]))

    def delete(self, name: str, ids: Sequence[str] | None = None, where: dict | None = None) -> None:
        c = self.col(name)
        with self.locked():
            if ids:
                for i in range(0, len(ids), BATCH):
                    c.delete(ids=list(ids[i:i + BATCH]))
            elif where:
                c.delete(where=where)

    def ids(self, name: str) -> set[str]:
        c = self.col(name)
        out: set[str] = set()
        total = c.count()
        for off in range(0, total, 5000):
            out.update(c.get(include=[], limit=5000, offset=off)["ids"])
        return out

    def count(self, name: str) -> int:
        return self.col(name).count()

    def query(self, name: str, embedding: Sequence[float], n: int,
              where: dict | None = None) -> list[tuple[str, float, dict]]:
        """Nearest ``n`` items: (id, cosine similarity, metadata), best first."""
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


def parse_id(vid: str) -> int:
    try:
        return int(vid[1:])
    except ValueError:
        raise MemoryError(f"bad vector id {vid!r}") from None
