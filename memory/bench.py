"""Memory benchmark: ingestion speed and query latency on a ~100-page text.

    python -m memory.bench [--pages 100] [--text FILE] [--queries 30] [--json OUT]

Without ``--text`` it builds the document from ``../shared/bench/dev.jsonl`` style articles when
found (``--corpus``), else from generated sentences. Runs on a temporary store; prints a table.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from .memory import Memory

PAGE_CHARS = 3000  # ~500 words: a printed page


def build_text(pages: int, corpus: Path | None) -> str:
    paras: list[str] = []
    if corpus and corpus.is_file():
        for line in corpus.read_text(encoding="utf-8").splitlines():
            try:
                for t in json.loads(line).get("turns", []):
                    paras += [p.strip() for p in t.split("\n") if len(p.strip()) > 40]
            except ValueError:
                continue
    if not paras:
        rnd = random.Random(0)
        words = ("data model river city energy market system music health court school "
                 "science story water light travel policy season design network").split()
        paras = [" ".join(rnd.choice(words) for _ in range(60)) + "." for _ in range(500)]
    out, n, i = [], 0, 0
    for page in range(1, pages + 1):
        buf = [f"Page {page}"]
        size = 0
        while size < PAGE_CHARS:
            p = paras[i % len(paras)]
            i += 1
            buf.append(p)
            size += len(p)
        out.append("\n\n".join(buf))
        n += size
    return "\n\n\f\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.bench")
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--text", type=Path, default=None, help="use this file instead")
    ap.add_argument("--corpus", type=Path,
                    default=Path(__file__).resolve().parents[2] / "shared" / "bench" / "dev.jsonl")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = a.text or tmp / "book.txt"
        if a.text is None:
            src.write_text(build_text(a.pages, a.corpus), encoding="utf-8")
        mem = Memory.open(tmp / "data", max_file_mb=200)
        t0 = time.perf_counter()
        mem.warmup()
        warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        doc = mem.add_document(src)
        ingest = time.perf_counter() - t0
        chunks = mem.document_chunks(doc.id)
        rnd = random.Random(1)
        queries = []
        for c in rnd.sample(chunks, min(a.queries, len(chunks))):
            words = c.split()
            start = rnd.randrange(max(1, len(words) - 12))
            queries.append(" ".join(words[start:start + 12]))
        lat, hits = [], 0
        for q in queries:
            t0 = time.perf_counter()
            items = mem.context_for(q, k=4, token_budget=1024, kinds=("chunk",))
            lat.append((time.perf_counter() - t0) * 1000)
            hits += any(q in it.text for it in items)
        mem.close()

    res = {
        "pages": a.pages if a.text is None else None, "chars": doc.chars, "chunks": doc.chunks,
        "warmup_s": round(warm, 2), "ingest_s": round(ingest, 2),
        "chunks_per_s": round(doc.chunks / ingest, 1),
        "query_ms_median": round(statistics.median(lat), 1),
        "query_ms_p95": round(sorted(lat)[max(0, int(len(lat) * 0.95) - 1)], 1),
        "recall_at_4": round(hits / len(queries), 3),
    }
    w = max(map(len, res))
    for k, v in res.items():
        print(f"{k:<{w}}  {v}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
