"""A sentence-transformers BERT encoder (all-MiniLM-L6-v2 and its kind) in numpy.

Why not sentence-transformers: it imports torch and transformers, 300+ MB resident in the app's
process for a 22M-parameter model, and with the engine in a child process (`engine_process =
"child"`) nothing else in the app needs them. This module runs the same network — BERT
embeddings, post-LayerNorm encoder layers with exact (erf) GELU, mean pooling over the attention
mask, L2 normalisation — from the folder's safetensors (memory-mapped, no copy) and its
``tokenizer.json`` (the `tokenizers` library, as the fast tokenizer sentence-transformers uses).
tests/memory/test_bert.py checks its vectors against sentence-transformers' (cosine > 0.99999).
Measured here (2 cores, 2026-11-28, medians of 5): a query in 7.0 ms (sentence-transformers
11.1 ms), 40 chunks of ~230 tokens in 2.02 s (1.85 s).

Only folders whose modules are exactly Transformer (a ``bert`` model, absolute positions) → mean
Pooling → optional Normalize are taken (``supports``); any other folder is left to
sentence-transformers (memory/embeddings.py).
"""
from __future__ import annotations

import json
import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from threadpoolctl import ThreadpoolController

ROWS = 512          # rows of a projection or the feed-forward pass at a time (see _forward)
_DTYPES = {"F32": np.dtype(np.float32), "F16": np.dtype(np.float16)}   # what is read; others are skipped


def _modules(folder: Path) -> list[str]:
    try:
        return [m.get("type", "").rsplit(".", 1)[-1]
                for m in json.loads((folder / "modules.json").read_text())]
    except (OSError, ValueError, AttributeError):
        return []


def supports(folder: Path) -> bool:
    """Whether ``folder`` is a model this encoder runs exactly: BERT, mean pooling, F32/F16."""
    mods = _modules(folder)
    if mods[:2] != ["Transformer", "Pooling"] or mods[2:] not in ([], ["Normalize"]):
        return False
    try:
        cfg = json.loads((folder / "config.json").read_text())
        pool = json.loads(next(folder.glob("*Pooling*/config.json")).read_text())
    except (OSError, ValueError, StopIteration):
        return False
    modes = [k for k, v in pool.items() if k.startswith("pooling_mode") and v]
    return (cfg.get("model_type") == "bert" and cfg.get("hidden_act") == "gelu"
            and cfg.get("position_embedding_type", "absolute") == "absolute"
            and modes == ["pooling_mode_mean_tokens"]
            and (folder / "tokenizer.json").is_file()
            and (folder / "model.safetensors").is_file())


def _safetensors(path: Path) -> dict[str, np.ndarray]:
    """The file's tensors as read-only arrays over one memory map (the format: an 8-byte
    little-endian header length, a JSON header of dtype/shape/offsets, then the data)."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    n = int.from_bytes(mm[:8], "little")
    header = json.loads(mm[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        dtype = _DTYPES.get(t.get("dtype")) if name != "__metadata__" else None
        if dtype is None:
            continue
        a, b = t["data_offsets"]
        arr = np.frombuffer(mm, dtype=dtype, count=(b - a) // dtype.itemsize, offset=base + a).reshape(t["shape"])
        out[name] = arr if arr.dtype == np.float32 else arr.astype(np.float32)
    return out


def _gelu(x: np.ndarray, rows: int = 64) -> np.ndarray:
    """BERT's exact GELU, x·Φ(x), Φ(x) = ½ + sign(x)·(½ − h), h = ½·erfc(|x|/√2). numpy has no
    erf, so erfc is Numerical Recipes' Chebyshev fit (fractional error < 1.2e-7), in float32, in
    place, 64 rows at a time so each pass stays in cache: within 4.8e-7 of the GELU through
    scipy's erf in float64 (3e-8 of the largest value, for x up to ±15), and the whole GELU
    0.08 s for 10,240 × 1,536 values (np.where alone took 4 ns a value)."""
    out = np.empty_like(x)
    for i in range(0, len(x), rows):
        xs = x[i:i + rows]
        t = np.abs(xs)
        t *= np.float32(0.5 / np.sqrt(2.0))
        t += 1
        np.reciprocal(t, out=t)
        p = t * np.float32(0.17087277)
        for c in (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418,
                  0.37409196, 1.00002368):
            p += np.float32(c)
            p *= t
        p += np.float32(-1.26551223)
        z2 = xs * xs
        z2 *= np.float32(0.5)          # (|x|/√2)²
        p -= z2
        np.exp(p, out=p)
        p *= t
        p *= np.float32(-0.5)          # −h
        p += np.float32(0.5)           # ½ − h
        p *= np.sign(xs)
        p += np.float32(0.5)           # Φ(x)
        np.multiply(xs, p, out=out[i:i + rows])
    return out


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class BertEncoder:
    """``BertEncoder(folder, threads).encode(texts, batch_size) -> float32 array (n, dim)``,
    normalised when the folder has a Normalize module. Thread-safe (one encode at a time).

    A batch of more than one slice of rows is split by rows and by text over ``threads`` workers
    (default: the CPU count), each with one BLAS thread: 40 chunks of ~230 tokens took 2.2–2.3 s
    so against 2.8–3.0 s with numpy's own two BLAS threads, which idle through every small product
    and elementwise pass (2 cores, 2026-11-28; sentence-transformers 2.1–2.2 s in that run)."""

    def __init__(self, folder: Path, threads: int | None = None):
        from tokenizers import Tokenizer

        self.workers = max(1, threads or os.cpu_count() or 1)   # long batches' (one BLAS thread each)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="hexa-embed") if self.workers > 1 else None
        self._blas = ThreadpoolController()
        self._lock = threading.Lock()

        self.folder = Path(folder)
        cfg = json.loads((self.folder / "config.json").read_text())
        try:
            st = json.loads((self.folder / "sentence_bert_config.json").read_text())
        except (OSError, ValueError):
            st = {}
        self.max_len = int(min(st.get("max_seq_length") or cfg["max_position_embeddings"],
                               cfg["max_position_embeddings"]))
        self.lower = bool(st.get("do_lower_case", False))
        self.normalize = "Normalize" in _modules(self.folder)
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.dim = int(cfg["hidden_size"])
        self.w = _safetensors(self.folder / "model.safetensors")
        if not any(k.startswith("embeddings.") for k in self.w):  # saved with a "bert." prefix
            self.w = {k.split(".", 1)[1]: v for k, v in self.w.items() if k.startswith("bert.")}
        # every product as activations @ (in, out) with contiguous weights, and q, k, v as one:
        # one matrix multiply a projection instead of three, no strided reads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            a = p + "attention.self."
            self.w[a + "qkv.weight"] = np.ascontiguousarray(np.concatenate(
                [self.w[a + n + ".weight"] for n in ("query", "key", "value")]).T)
            self.w[a + "qkv.bias"] = np.concatenate([self.w[a + n + ".bias"] for n in ("query", "key", "value")])
            # attention's 1/√d folded into the query's columns
            scale = np.float32(1.0 / np.sqrt(self.dim // self.heads))
            self.w[a + "qkv.weight"][:, :self.dim] *= scale
            self.w[a + "qkv.bias"][:self.dim] *= scale
            for name in ("attention.output.dense", "intermediate.dense", "output.dense"):
                self.w[p + name + ".weight"] = np.ascontiguousarray(self.w[p + name + ".weight"].T)
        self.tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tok.enable_truncation(self.max_len)
        self.tok.no_padding()

    def _each(self, fn: Callable[[int], None], items: range, parallel: bool) -> None:
        if not parallel or self._pool is None:
            for i in items:
                fn(i)
        else:
            for _ in self._pool.map(fn, items):
                pass

    def _forward(self, ids: np.ndarray, mask: np.ndarray, parallel: bool) -> np.ndarray:
        w, (n, s), h = self.w, ids.shape, self.heads
        d = self.dim // h
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:s]
             + w["embeddings.token_type_embeddings.weight"][0]).reshape(n * s, self.dim)
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        lengths = mask.sum(1)
        rows = range(0, n * s, ROWS)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            qkv = np.empty((n * s, 3 * self.dim), dtype=np.float32)

            def project(r: int) -> None:
                np.matmul(x[r:r + ROWS], w[p + "attention.self.qkv.weight"], out=qkv[r:r + ROWS])
                qkv[r:r + ROWS] += w[p + "attention.self.qkv.bias"]

            self._each(project, rows, parallel)
            q, k, v = (qkv[:, j * self.dim:(j + 1) * self.dim].reshape(n, s, h, d) for j in range(3))
            ctx = np.zeros((n, s, h, d), dtype=np.float32)     # padding rows stay 0: never read

            def attend(r: int) -> None:     # one text at its own length: no mask, scores in cache
                ln = lengths[r]
                k_t = np.ascontiguousarray(k[r, :ln].transpose(1, 2, 0))   # BLAS's fast layout for q·kᵀ
                scores = q[r, :ln].transpose(1, 0, 2) @ k_t
                scores -= scores.max(-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(-1, keepdims=True)
                ctx[r, :ln] = (scores @ v[r, :ln].transpose(1, 0, 2)).transpose(1, 0, 2)

            self._each(attend, range(n), parallel)
            att = ctx.reshape(n * s, self.dim) @ w[p + "attention.output.dense.weight"]
            att += w[p + "attention.output.dense.bias"]
            x = _layer_norm(att + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self.eps)
            ff = np.empty_like(x)

            def feed_forward(r: int) -> None:     # the 4×-wide middle stays in cache
                mid = x[r:r + ROWS] @ w[p + "intermediate.dense.weight"]
                mid += w[p + "intermediate.dense.bias"]
                np.matmul(_gelu(mid), w[p + "output.dense.weight"], out=ff[r:r + ROWS])

            self._each(feed_forward, rows, parallel)
            ff += w[p + "output.dense.bias"]
            x = _layer_norm(ff + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        m = mask.reshape(n, s, 1).astype(np.float32)
        pooled = (x.reshape(n, s, self.dim) * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        if self.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        texts = [t.lower() if self.lower else t for t in texts]
        encs = self.tok.encode_batch(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # like sentence-transformers: batches of similar lengths, padded to the batch's longest
        order = sorted(range(len(texts)), key=lambda i: -len(encs[i].ids))
        with self._lock:
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                s = max(len(encs[i].ids) for i in idx)
                ids = np.zeros((len(idx), s), dtype=np.int64)
                mask = np.zeros((len(idx), s), dtype=np.int64)
                for r, i in enumerate(idx):
                    e = encs[i].ids
                    ids[r, :len(e)] = e
                    mask[r, :len(e)] = 1
                # a short batch (a query) is one slice of rows, no pool, and one BLAS thread too:
                # with two, OpenBLAS's second thread spins ~100 ms after the last product, a core
                # taken from the engine as it prefills the prompt this query was for (a 256-token
                # chunk in the engine's process right after a query: 230 against 179 ms, median of
                # 12; with one thread 181 against 188). The query itself: ~12 ms against ~10.
                parallel = self._pool is not None and ids.size >= 2 * ROWS
                with self._blas.limit(limits=1, user_api="blas"):
                    out[idx] = self._forward(ids, mask, parallel)
        return out
