"""Where exact search (numpy over the SQLite embeddings) stops being as fast as chromadb's HNSW.

    python -m memory.bench_exact [--sizes 1000,5000,10000,20000,50000] [--queries 50]

Random unit vectors (384-d, MiniLM's size) are added to a real store (SQLite ``vectors`` table
and a chromadb collection) up to each size; at each, the median time of one query (top 12, as
retrieval asks) through ``StoredVectors.exact_query`` (its cache warm, as in a session) and through
chromadb's ``query()`` are printed. ``stored.EXACT_MAX`` is set from this.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .store import Store
from .stored import StoredVectors
from .vectors import VectorIndex

DIM = 384


def _median_ms(fn, queries) -> float:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.bench_exact")
    ap.add_argument("--sizes", default="1000,5000,10000,20000,50000")
    ap.add_argument("--queries", type=int, default=50)
    a = ap.parse_args(argv)
    sizes = sorted(int(s) for s in a.sizes.split(","))
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "hexa.db")
        stored = StoredVectors(store)
        vi = VectorIndex(Path(tmp) / "vectors", embedder=None)  # type: ignore[arg-type]
        vi.open()
        have = 0
        print(f"{'vectors':>8}  {'exact ms':>9}  {'hnsw ms':>8}  ratio")
        for n in sizes:
            while have < n:
                k = min(2000, n - have)
                vecs = rng.standard_normal((k, DIM)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                ids = [f"c{have + i + 1}" for i in range(k)]
                metas = [{"doc_id": 1, "session_id": 0}] * k
                with store.write() as c:
                    stored.put(c, [("chunks", v, v, m, e) for v, m, e in zip(ids, metas, vecs)])
                vi.upsert("chunks", ids, vecs.tolist(), ids, metas)
                have += k
            queries = [q / np.linalg.norm(q) for q in rng.standard_normal((a.queries, DIM))]
            stored.exact_query("chunks", queries[0], 12)  # fill the cache, as a session has
            ex = _median_ms(lambda q: stored.exact_query("chunks", q, 12), queries)
            hn = _median_ms(lambda q: vi.query("chunks", q.tolist(), 12), queries)
            print(f"{n:>8}  {ex:>9.2f}  {hn:>8.2f}  {ex / hn:.2f}", flush=True)
        vi.close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
