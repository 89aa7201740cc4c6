"""Crash benchmark: is an earlier fact still found after a ``kill -9`` during a later ingestion?

    python -m memory.bench_crash [--trials 20] [--mb 4] [--kill-after 6] [--json OUT]

Each trial, on a fresh store under a temporary folder:
  1. store a one-line fact (a document) and search for it: it must rank first;
  2. run ``hexa memory add`` of a ~``--mb`` MB text in a subprocess, SIGKILL it after
     ``--kill-after`` seconds after its first vectors are written (the model load and the
     chunking before take a varying time on a busy CPU; the chunks embedded by then are printed);
  3. *raw*: ask chromadb itself (a fresh client, as a new process sees it) for the 100 nearest
     chunks to the fact's own stored embedding: whether HNSW still reaches it (upstream chromadb
     issues #7758 and #6975; nothing of hexa's repair has run yet);
  4. *hexa*: open the store as ``hexa memory search`` does (crash detection, probe, repair) and
     search for the fact; its rank, and the time of the first search (detection + repair);
  5. a second open and search: the rank after the repair.
Prints one line per trial and a summary; ``--json`` writes them all.

``--fast``: the writer is ``Memory.add_document`` in a child process with
``bench_check.WordHashEmbedder`` (no model: thousands of chunks in seconds) on 6,000 near-identical
chunks, killed once ``--kill-chunks`` of them are embedded; the parent uses the same embedder.
That is where the bug shows (docs/memory.md); the real-model run takes minutes a trial.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .bench import PAGE_CHARS, build_text
from .bench_check import WordHashEmbedder
from .memory import Memory

FAST_CHILD = """
import sys
from pathlib import Path
from memory.bench_check import WordHashEmbedder
from memory import Memory
Memory.open(Path(sys.argv[1]), embedder=WordHashEmbedder(), max_file_mb=200).add_document(
    Path(sys.argv[2]))
"""

FACT = "The spare key to the blue boathouse is hidden under the third flowerpot from the left."
QUERY = "where is the spare key to the blue boathouse hidden?"
ROOT = Path(__file__).resolve().parents[1]


def _rank(mem: Memory, k: int = 10) -> int | None:
    items = mem.context_for(QUERY, k=k, token_budget=100_000, kinds=("chunk",))
    for i, it in enumerate(items, 1):
        if it.source.startswith("fact.txt"):
            return i
    return None


def raw_reachable(vectors: Path, vid: str, n: int = 100) -> bool | None:
    """Does chromadb's own ``query()`` return ``vid`` among the ``n`` nearest to its own stored
    embedding? None when chromadb does not hold ``vid`` at all."""
    import chromadb
    from chromadb.api.client import Client
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(vectors), settings=Settings(
        anonymized_telemetry=False))
    try:
        col = client.get_collection("chunks")
        got = col.get(ids=[vid], include=["embeddings"])
        if not got["ids"]:
            return None
        res = col.query(query_embeddings=[list(got["embeddings"][0])],
                        n_results=min(n, col.count()), include=[])
        return vid in res["ids"][0]
    finally:
        client.close()
        Client.clear_system_cache()  # the next client reads the files afresh, as a new process


def _wait_embedding(db: Path, proc: subprocess.Popen, fact_doc: int, limit: float = 300,
                    at_least: int = 1) -> float:
    """Wait until the child has stored the big document and written its first vectors (the
    load of the model and the chunking of 4 MB take seconds on a busy CPU, varying); returns the
    time waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit and proc.poll() is None:
        try:
            con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)
            try:
                n = con.execute("SELECT COUNT(*) FROM chunks WHERE doc_id != ? AND embedded = 1",
                                (fact_doc,)).fetchone()[0]
            finally:
                con.close()
        except sqlite3.Error:
            n = 0
        if n >= at_least:
            break
        time.sleep(0.1)
    return time.monotonic() - t0


def trial(tmp: Path, big: Path, kill_after: float, log: Path, fast_kill: int = 0) -> dict:
    data = tmp / "data"
    fact = tmp / "fact.txt"
    fact.write_text(FACT + "\n", encoding="utf-8")
    with _open(data, fast_kill) as mem:
        doc = mem.add_document(fact)
        before = _rank(mem)
        fact_vid = f"c{mem.store.scalar('SELECT id FROM chunks WHERE doc_id = ?', (doc.id,))}"
    env = dict(os.environ, HEXA_DATA_DIR=str(data), PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1",
               HEXA_EMBED_THREADS="1")
    with open(log, "ab") as err:
        cmd = ([sys.executable, "-c", FAST_CHILD, str(data), str(big)] if fast_kill else
               [sys.executable, "-m", "app.cli", "memory", "add", "--max-mb", "200", str(big)])
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        waited = _wait_embedding(data / "memory" / "hexa.db", proc, doc.id,
                                 at_least=max(1, fast_kill))
        time.sleep(kill_after)
        alive = proc.poll() is None
        if alive:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    db = sqlite3.connect(data / "memory" / "hexa.db")
    embedded, total = db.execute("SELECT COALESCE(SUM(embedded), 0), COUNT(*) FROM chunks "
                                 "WHERE doc_id != ?", (doc.id,)).fetchone()
    db.close()
    raw = raw_reachable(data / "memory" / "vectors", fact_vid)
    t0 = time.perf_counter()
    with _open(data, fast_kill) as mem:
        mem.warmup()
        mid = time.perf_counter()
        after = _rank(mem)
        first_search_s = time.perf_counter() - mid
        open_s = mid - t0
        notices = list(mem.notices)
    with _open(data, fast_kill) as mem:
        again = _rank(mem)
    raw_after = raw_reachable(data / "memory" / "vectors", fact_vid)
    return {"rank_before": before, "waited_s": round(waited, 1), "killed": alive, "chunks_embedded": embedded,
            "chunks_total": total, "raw_reachable": raw, "rank_after": after,
            "open_and_check_s": round(open_s, 3), "first_search_s": round(first_search_s, 3),
            "rank_after_reopen": again, "raw_reachable_after": raw_after, "notices": notices}


def _open(data: Path, fast: int) -> Memory:
    return Memory.open(data, max_file_mb=200, embedder=WordHashEmbedder() if fast else None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.bench_crash")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--mb", type=float, default=4.0, help="size of the big text (MB)")
    ap.add_argument("--kill-after", type=float, default=4.0, metavar="S")
    ap.add_argument("--corpus", type=Path,
                    default=Path(__file__).resolve().parents[2] / "shared" / "bench" / "dev.jsonl")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--fast", action="store_true", help="hash embedder, 6,000 similar chunks")
    ap.add_argument("--kill-chunks", type=int, default=250, metavar="N",
                    help="with --fast: kill once N chunks are embedded (default 250)")
    a = ap.parse_args(argv)
    if a.fast:
        a.kill_after = 0.0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        big = tmp / "big.txt"
        if a.fast:
            big.write_text(" ".join(f"Line {i}: the river boat number {i % 97} sailed past mill "
                                    f"{i % 31} on day {i}." for i in range(60000)))
        else:
            big.write_text(build_text(int(a.mb * 1e6 / PAGE_CHARS), a.corpus), encoding="utf-8")
        for i in range(a.trials):
            t = tmp / f"t{i}"
            t.mkdir()
            r = trial(t, big, a.kill_after, tmp / "child.log",
                      a.kill_chunks + 40 * i % 200 if a.fast else 0)
            rows.append(r)
            print(f"trial {i + 1:>2}: before #{r['rank_before']}, killed={r['killed']} at "
                  f"{r['chunks_embedded']}/{r['chunks_total']} chunks, raw HNSW reaches it: "
                  f"{r['raw_reachable']}, after #{r['rank_after']} (open+check "
                  f"{r['open_and_check_s']:.2f} s, search {r['first_search_s']:.2f} s), "
                  f"reopened #{r['rank_after_reopen']}, raw HNSW then: {r['raw_reachable_after']}",
                  flush=True)
            for n in r["notices"]:
                print(f"          notice: {n}", flush=True)
        log = (tmp / "child.log").read_text(errors="replace").strip() if (
            tmp / "child.log").exists() else ""
    n = len(rows)
    summary = {
        "trials": n,
        "found_before_kill": sum(r["rank_before"] == 1 for r in rows),
        "raw_unreachable": sum(r["raw_reachable"] is False for r in rows),
        "found_first_after": sum(r["rank_after"] == 1 for r in rows),
        "found_first_reopened": sum(r["rank_after_reopen"] == 1 for r in rows),
        "raw_unreachable_after": sum(r["raw_reachable_after"] is False for r in rows),
        "open_and_check_s_max": max((r["open_and_check_s"] for r in rows), default=None),
    }
    print(json.dumps(summary))
    if log:
        print(f"child stderr (last line): {log.splitlines()[-1]}", file=sys.stderr)
    if a.json:
        a.json.write_text(json.dumps({"summary": summary, "trials": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
