"""The embeddings themselves, kept in SQLite (table ``vectors``, schema v4).

chromadb's HNSW segment can lose reachability after a ``kill -9`` (upstream chromadb issues #7758
and #6975: ``get()`` returns a record that ``query()`` never finds). With every embedding in
SQLite, the index is rebuilt without re-embedding anything, and small collections are searched
exactly (numpy over these vectors) instead of through HNSW at all.

A row: ``vid`` (the chromadb id), its collection, a hash of the text it embeds (a stored vector is
reused only for the same text), the metadata chromadb has (so a ``where`` filter can be applied
here too), the vector (little-endian float32). ``seq`` grows with every write: what a process
wrote since a point is ``seq > that``.
"""
from __future__ import annotations

import hashlib
import json
import threading
from typing import Sequence

import numpy as np

from .store import Store

# Collections up to this many vectors are searched exactly; above, through HNSW. Measured with
# ``python -m memory.bench_exact`` (see docs/memory.md): numpy over N x 384 float32 plus the
# top-n is as fast as one chromadb HNSW query up to about this size on this 2-core machine.
EXACT_MAX = 20_000

_LE = "<f4"


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def pack(vec: Sequence[float]) -> bytes:
    return np.asarray(vec, dtype=_LE).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=_LE)


class StoredVectors:
    """The ``vectors`` table, plus a per-collection matrix cache for exact search."""

    def __init__(self, store: Store):
        self.store = store
        self._cache: dict[str, tuple[tuple, list[str], list[dict], np.ndarray]] = {}
        self._lock = threading.Lock()
        self.ready = False  # every vector of the index is here (set once the backfill is done)

    def is_ready(self) -> bool:
        if not self.ready:
            self.ready = self.store.scalar(
                "SELECT value FROM vector_state WHERE key = 'backfilled'") is not None
        return self.ready

    # -- writing (each in the caller's transaction ``c``) -------------------------------------
    @staticmethod
    def put(c, rows: Sequence[tuple[str, str, str, dict, Sequence[float]]]) -> None:
        """rows: (collection, vid, text, metadata, vector)."""
        c.executemany(
            "INSERT OR REPLACE INTO vectors (vid, collection, text_key, meta, vector) "
            "VALUES (?, ?, ?, ?, ?)",
            [(vid, col, text_key(text), json.dumps(meta, sort_keys=True), pack(vec))
             for col, vid, text, meta, vec in rows])

    @staticmethod
    def delete(c, vids: Sequence[str]) -> None:
        vids = list(vids)
        for i in range(0, len(vids), 500):
            part = vids[i:i + 500]
            c.execute(f"DELETE FROM vectors WHERE vid IN ({','.join('?' * len(part))})", part)

    # -- reading ------------------------------------------------------------------------------
    def lookup(self, vids: Sequence[str]) -> dict[str, tuple[str, list[float]]]:
        """vid -> (text key, vector) for the stored ones among ``vids``."""
        out: dict[str, tuple[str, list[float]]] = {}
        vids = list(vids)
        for i in range(0, len(vids), 500):
            part = vids[i:i + 500]
            for r in self.store.query(f"SELECT vid, text_key, vector FROM vectors WHERE vid IN "
                                      f"({','.join('?' * len(part))})", part):
                out[r[0]] = (r[1], unpack(r[2]).tolist())
        return out

    def seq(self) -> int:
        return int(self.store.scalar("SELECT COALESCE(MAX(seq), 0) FROM vectors"))

    def count(self, collection: str) -> int:
        return int(self.store.scalar("SELECT COUNT(*) FROM vectors WHERE collection = ?",
                                     (collection,)))

    def rows(self, collection: str, vids: Sequence[str]) -> list[tuple[str, np.ndarray]]:
        got = []
        vids = list(vids)
        for i in range(0, len(vids), 500):
            part = vids[i:i + 500]
            got += [(r[0], unpack(r[1])) for r in self.store.query(
                f"SELECT vid, vector FROM vectors WHERE collection = ? AND vid IN "
                f"({','.join('?' * len(part))})", [collection, *part])]
        return got

    def since(self, seq: int) -> list[str]:
        return [r[0] for r in self.store.query("SELECT vid FROM vectors WHERE seq > ?", (seq,))]

    def matrix(self, collection: str) -> tuple[list[str], list[dict], np.ndarray]:
        """Every stored vector of ``collection`` (ids, metadata, N x d), cached until it changes."""
        key = tuple(self.store.one("SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM vectors "
                                   "WHERE collection = ?", (collection,)))
        with self._lock:
            hit = self._cache.get(collection)
            if hit is not None and hit[0] == key:
                return hit[1], hit[2], hit[3]
        rows = self.store.query("SELECT vid, meta, vector FROM vectors WHERE collection = ? "
                                "ORDER BY seq", (collection,))
        ids = [r[0] for r in rows]
        metas = [json.loads(r[1]) for r in rows]
        mat = (np.frombuffer(b"".join(r[2] for r in rows), dtype=_LE).reshape(len(rows), -1)
               if rows else np.zeros((0, 0), dtype=np.float32))
        with self._lock:
            self._cache[collection] = (key, ids, metas, mat)
        return ids, metas, mat

    def exact_query(self, collection: str, embedding: Sequence[float], n: int,
                    where: dict | None = None) -> list[tuple[str, float, dict]] | None:
        """Nearest ``n`` by cosine over the stored vectors (they are normalised); None when the
        ``where`` filter uses an operator not handled here (the caller asks chromadb)."""
        ids, metas, mat = self.matrix(collection)
        if not ids or n <= 0:
            return []
        if where:
            flags = [_match(where, m) for m in metas]
            if any(f is None for f in flags):
                return None
            keep = [i for i, f in enumerate(flags) if f]
            if not keep:
                return []
        q = np.asarray(embedding, dtype=np.float32)
        # einsum, not ``mat @ q``: BLAS's threads cost ~12 ms per call at 20k on this busy
        # 2-core machine, einsum's single loop 0.9 ms (measured)
        sims = np.einsum("ij,j->i", mat, q)
        if where:
            idx = np.asarray(keep)
            sims_k = sims[idx]
            top = idx[_top(sims_k, n)]
        else:
            top = _top(sims, n)
        return [(ids[i], float(sims[i]), metas[i]) for i in top]


class _Unsupported(Exception):
    pass


def _top(sims: np.ndarray, n: int) -> np.ndarray:
    n = min(n, len(sims))
    part = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
    return part[np.argsort(-sims[part], kind="stable")]


def match(where: dict, meta: dict) -> bool:
    """chromadb's ``where`` semantics for the operators hexa uses ($eq, $ne, $and, $or, a bare
    value); raises ``_Unsupported`` for anything else."""
    for key, cond in where.items():
        if key == "$and":
            if not all(match(w, meta) for w in cond):
                return False
        elif key == "$or":
            if not any(match(w, meta) for w in cond):
                return False
        elif key.startswith("$"):
            raise _Unsupported(key)
        elif isinstance(cond, dict):
            for op, val in cond.items():
                if op == "$eq":
                    ok = meta.get(key) == val
                elif op == "$ne":
                    ok = meta.get(key) != val
                else:
                    raise _Unsupported(op)
                if not ok:
                    return False
        elif meta.get(key) != cond:
            return False
    return True


def _match(where: dict, meta: dict):
    try:
        return match(where, meta)
    except _Unsupported:
        return None

