"""Detecting a vector index that a crash left unable to find what it holds.

After a ``kill -9`` mid-write, chromadb's (1.5.9) HNSW segment can keep a record that ``get()``
returns and ``query()`` never reaches (upstream issues #7758, #6975); comparing ids sees nothing.

- A process that writes vectors leaves a marker file ``vectors.writer-<pid>`` (holding the
  ``vectors.seq`` before its first write) and removes it when it closes cleanly. A marker whose
  process is gone is an unclean shutdown.
- The probe queries chromadb with stored embeddings: each vector must come back among the nearest
  to its own embedding. After an unclean shutdown, every vector written since the marker is probed
  plus a sample of older ones (``SAMPLE_OLDER``); ``hexa memory check`` probes them all.
"""
from __future__ import annotations

import contextlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from .stored import StoredVectors
from .vectors import COLLECTIONS, PREFIX, VectorIndex

SAMPLE_OLDER = 1000  # older vectors probed after a crash: ~1-2 s on this machine (see the docs)
PROBE_N = 10         # a vector must be among the 10 nearest to its own embedding
PROBE_BATCH = 256    # query embeddings per chromadb call
REBUILD_BATCH = 512  # rows per chromadb upsert when the vectors are stored (nothing to embed)
TIE = 1e-4  # cosine distance under which a result is the vector itself (or the same text's)


@dataclass
class ProbeResult:
    checked: int = 0
    unreachable: list[str] = field(default_factory=list)
    seconds: float = 0.0


# marker files in use by this process -> how many IndexKeepers use them (two ``Memory`` objects
# of one process share the pid, hence the file)
_ACTIVE: dict[Path, int] = {}


class WriterMarkers:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.mine = self.folder / f"vectors.writer-{os.getpid()}"
        self.active = False

    def begin(self, seq: int) -> None:
        """Before this process's first vector write (until ``end``)."""
        if self.active:
            return
        if not _ACTIVE.get(self.mine):
            self.folder.mkdir(parents=True, exist_ok=True)
            self.mine.write_text(str(seq))
        _ACTIVE[self.mine] = _ACTIVE.get(self.mine, 0) + 1
        self.active = True

    def end(self) -> None:
        """A clean close: everything this process wrote went through chromadb's close."""
        if self.active:
            self.active = False
            _ACTIVE[self.mine] -= 1
            if not _ACTIVE[self.mine]:
                del _ACTIVE[self.mine]
                with contextlib.suppress(OSError):
                    self.mine.unlink()

    def dead(self) -> list[tuple[Path, int]]:
        """Markers of processes that ended without a clean close: (file, seq before it wrote)."""
        out = []
        for f in self.folder.glob("vectors.writer-*"):
            try:
                pid = int(f.name.rsplit("-", 1)[1])
            except ValueError:
                continue
            if pid == os.getpid() and _ACTIVE.get(f):
                continue
            if pid != os.getpid() and _alive(pid):
                continue
            try:
                seq = int(f.read_text() or 0)
            except (OSError, ValueError):
                seq = 0
            out.append((f, seq))
        return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def probe(vectors: VectorIndex, stored: StoredVectors, vids: dict[str, list[str]]) -> ProbeResult:
    """Query chromadb with each listed vector's stored embedding; those not found come back."""
    res = ProbeResult()
    t0 = time.perf_counter()
    for name in COLLECTIONS:
        want = vids.get(name) or []
        if not want:
            continue
        with vectors._tlock:
            col = vectors.col(name)
            total = col.count()
            for i in range(0, len(want), PROBE_BATCH):
                rows = stored.rows(name, want[i:i + PROBE_BATCH])
                if not rows or total == 0:
                    continue
                got = col.query(query_embeddings=[v.tolist() for _, v in rows],
                                n_results=min(PROBE_N, total), include=["distances"])
                for (vid, _), ids, dists in zip(rows, got["ids"], got["distances"]):
                    res.checked += 1
                    if dists and min(dists) < TIE:
                        continue  # itself, or an identical vector (the same text elsewhere)
                    res.unreachable.append(vid)
    res.seconds = time.perf_counter() - t0
    return res


def pick(expected: dict[str, set[str]], recent: set[str], sample_older: int | None,
         rng: random.Random | None = None) -> dict[str, list[str]]:
    """What to probe: every expected vector in ``recent``, and ``sample_older`` of the others
    (all when None)."""
    rng = rng or random.Random(0)
    older = sorted(v for name in COLLECTIONS for v in expected[name] - recent)
    if sample_older is not None and len(older) > sample_older:
        older = rng.sample(older, sample_older)
    chosen = set(older) | {v for name in COLLECTIONS for v in expected[name] & recent}
    return {name: sorted(expected[name] & chosen) for name in COLLECTIONS}


def backfill(vectors: VectorIndex, stored: StoredVectors, store, page: int = 2000) -> int:
    """An older store: copy the embeddings chromadb holds into SQLite, once. Returns how many."""
    n = 0
    with vectors._tlock:
        for name in COLLECTIONS:
            col = vectors.col(name)
            total = col.count()
            for off in range(0, total, page):
                got = col.get(include=["embeddings", "documents", "metadatas"], limit=page,
                              offset=off)
                rows = [(name, vid, doc or "", meta or {}, emb) for vid, doc, meta, emb in
                        zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])]
                with store.write() as c:
                    stored.put(c, [r for r in rows if not c.execute(
                        "SELECT 1 FROM vectors WHERE vid = ?", (r[1],)).fetchone()])
                n += len(rows)
    return n


# -- what IndexKeeper calls (keeper: indexing.IndexKeeper, under its lock) -------------------------
@dataclass
class CheckReport:
    vectors: int = 0          # vectors the index should hold
    probed: int = 0
    unreachable: int = 0      # in collections searched through HNSW: search misses them
    unreachable_exact: int = 0  # in collections searched exactly (stored.EXACT_MAX): harmless
    unstored: int = 0         # expected vectors without a stored embedding (not probed)
    repaired: bool = False
    still_unreachable: int = 0  # after the rebuild (HNSW's approximation, not damage)
    probe_s: float = 0.0
    repair_s: float = 0.0
    examples: list[str] = field(default_factory=list)


def backfill_once(keeper) -> None:
    """Fill ``vectors`` from chromadb for a store made before schema v4 (flag in vector_state)."""
    store = keeper.store
    if store.scalar("SELECT value FROM vector_state WHERE key = 'backfilled'") is not None:
        return
    n = backfill(keeper.vectors, keeper.stored, store)
    with store.write() as c:
        c.execute("INSERT OR REPLACE INTO vector_state VALUES ('backfilled', ?)", (str(n),))
    keeper.stored.ready = True
    if n:
        keeper.notice(f"vector index: {n} embeddings copied into the SQLite store (once)")


def drop_orphans(store) -> None:
    """Stored vectors whose row is gone (a crash between the SQL delete and the vector drop)."""
    with store.write() as c:
        c.execute("DELETE FROM vectors WHERE collection = 'chunks' AND "
                  "CAST(substr(vid, 2) AS INTEGER) NOT IN (SELECT id FROM chunks)")
        c.execute("DELETE FROM vectors WHERE collection != 'chunks' AND "
                  "CAST(substr(vid, 2) AS INTEGER) NOT IN (SELECT id FROM messages)")


def after_unclean_shutdown(keeper, expected: dict[str, set[str]]) -> None:
    """On the first use in a process, before it writes: if a writer died without closing, rebuild
    the index from SQLite (nothing is re-embedded).

    Why not only when a probe fails: measured (docs/memory.md), right after the kill every vector
    is still reachable; it is the next writes into the recovered segment that leave older vectors
    (the first ones written, e.g. the fact) unreachable. So the probe runs first, for the report,
    and the rebuild always follows; ``hexa memory check`` probes on demand."""
    dead = keeper.markers.dead()
    drop_orphans(keeper.store)
    if not dead:
        return
    since = min(seq for _, seq in dead)
    res = probe(keeper.vectors, keeper.stored,
                pick(expected, set(keeper.stored.since(since)), SAMPLE_OLDER))
    t0 = time.perf_counter()
    n = rebuild(keeper)
    keeper.notice(f"vector index: unclean shutdown of a writer; {len(res.unreachable)} of "
                  f"{res.checked} vectors probed were unreachable ({res.seconds:.1f} s); "
                  f"rebuilt {n} vectors from SQLite in {time.perf_counter() - t0:.1f} s")
    for f, _ in dead:
        with contextlib.suppress(OSError):
            f.unlink()


def rebuild(keeper) -> int:
    """The vectors of every row flagged embedded written again into an emptied index, from the
    stored embeddings (nothing re-embedded); rows still pending are left to the catch-up."""
    alias = {"messages": "m", "chunks": "c"}
    done = {t: [r[0] for r in keeper.store.query(f"SELECT id FROM {t} WHERE embedded = 1")]
            for t in alias}
    keeper.vectors.reset()
    keeper._mark_all(0)
    keeper._checked = True
    n = 0
    for table, ids in done.items():
        for i in range(0, len(ids), REBUILD_BATCH):
            part = ids[i:i + REBUILD_BATCH]
            rows = keeper._pending(table, where=f" AND {alias[table]}.id IN "
                                   f"({','.join('?' * len(part))})", args=part)
            n += keeper._write_batch(table, rows)
    return n


def check(keeper, full: bool, repair: bool) -> CheckReport:
    rep = CheckReport()
    keeper.vectors.open()
    backfill_once(keeper)
    drop_orphans(keeper.store)
    expected = keeper._expected_ids()
    present = {name: keeper.vectors.ids(name) for name in COLLECTIONS}
    stored = {r[0] for r in keeper.store.query("SELECT vid FROM vectors")}
    for name in COLLECTIONS:
        expected[name] &= present[name]  # missing ones are id-level: the usual repair's job
    rep.vectors = sum(map(len, expected.values()))
    rep.unstored = sum(len(expected[n] - stored) for n in COLLECTIONS)
    dead = keeper.markers.dead()
    recent = set(keeper.stored.since(min(s for _, s in dead))) if dead else set()
    res = probe(keeper.vectors, keeper.stored,
                pick(expected, recent, None if full else SAMPLE_OLDER))
    from .stored import EXACT_MAX

    exact = {PREFIX[n] for n in COLLECTIONS if keeper.stored.count(n) <= EXACT_MAX}
    hnsw = [v for v in res.unreachable if v[0] not in exact]
    rep.probed, rep.unreachable, rep.probe_s = res.checked, len(hnsw), res.seconds
    rep.unreachable_exact = len(res.unreachable) - len(hnsw)
    rep.examples = hnsw[:5]
    if hnsw and repair:
        t0 = time.perf_counter()
        rebuild(keeper)
        rep.repair_s = time.perf_counter() - t0
        rep.repaired = True
        by_col: dict[str, list[str]] = {}
        for v in hnsw:
            by_col.setdefault(next(n for n in COLLECTIONS if PREFIX[n] == v[0]), []).append(v)
        rep.still_unreachable = len(probe(keeper.vectors, keeper.stored, by_col).unreachable)
    if full and (not hnsw or rep.repaired):
        for f, _ in dead:  # everything was probed: the crash is dealt with
            with contextlib.suppress(OSError):
                f.unlink()
    return rep
