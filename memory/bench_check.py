"""Build a large store for timing ``hexa memory check`` (its probe embeds nothing, so the store's
embedder does not matter to what is timed).

    python -m memory.bench_check --out DIR [--chunks 50000]
    HEXA_DATA_DIR=DIR hexa memory check

MiniLM embeds ~10-20 chunks/s on this shared 2-core machine (50k chunks: about an hour), so the
store is built with ``WordHashEmbedder``: a text's words hashed into 384 signed buckets,
normalised (the same idea as the tests' HashEmbedder). Texts are distinct generated sentences.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from pathlib import Path

import numpy as np

from .memory import Memory


class WordHashEmbedder:
    DIM = 384
    loaded = True
    name = "word-hash-384"

    def model(self):
        return self

    @property
    def dimension(self) -> int:
        return self.DIM

    def __call__(self, texts):
        out = np.zeros((len(texts), self.DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in re.findall(r"\w+", text.lower()):
                h = hashlib.blake2b(w.encode(), digest_size=8).digest()
                out[i, int.from_bytes(h[:4], "little") % self.DIM] += 1.0 if h[4] & 1 else -1.0
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return out.tolist()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.bench_check")
    ap.add_argument("--out", type=Path, required=True, help="data folder to create")
    ap.add_argument("--chunks", type=int, default=50_000)
    a = ap.parse_args(argv)
    topics = ("rivers", "markets", "engines", "orchards", "glaciers", "choirs", "bridges", "tides")
    per_doc = 6_250
    t0 = time.perf_counter()
    with Memory.open(a.out, max_file_mb=500, embedder=WordHashEmbedder()) as mem:
        i = 0
        while mem.stats()["chunks"] < a.chunks:
            left = a.chunks - mem.stats()["chunks"]
            n = min(per_doc, left)
            # ~10 sentences of ~14 estimated tokens give one 200-token chunk (with overlap)
            text = " ".join(f"Note {i}-{k}: the {topics[i % len(topics)]} of district {k % 37} "
                            f"changed on day {k} by {k * 7 % 101} units." for k in range(n * 11))
            f = a.out / f"doc{i}.txt"
            a.out.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
            doc = mem.add_document(f)
            f.unlink()
            print(f"doc {i}: {doc.chunks} chunks ({time.perf_counter() - t0:.0f} s)", flush=True)
            i += 1
        st = mem.stats()
    print(f"{st['chunks']} chunks in {a.out} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
