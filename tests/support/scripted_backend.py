"""A scripted runtime for fast generation tests: a bigram "model" over a 64-token vocabulary that
implements ``engine.runtime.backend.Backend``, so the generation loop, every method's speculator, cancel
and the stop rules run in milliseconds without the real model.

The model's next token depends only on the current one (``SUCCESSOR``, overridable), so tree
verification reproduces plain decoding exactly, as the real kernels do; the logits carry seeded
noise so that sampling has a real distribution to draw from.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.runtime.backend import Backend
from engine.engine import Engine
from engine.runtime.kv_cache import KVCache
from engine.runtime.profiling import CostCurve, CostModel

V = 64
EOS = 2


def backend_members() -> set[str]:
    """What ``Backend`` declares: every runtime (this one included) must have all of it."""
    return {n for n in vars(Backend) if not n.startswith("_")} | set(Backend.__annotations__)


def successor(token: int) -> int:
    """The default next token: a fixed permutation-like walk that never reaches EOS."""
    nxt = (5 * token + 3) % V
    return nxt if nxt != EOS else (nxt + 1) % V


class Config:
    vocab_size = V
    max_positions = 4096
    eos_ids = (EOS,)


class BigramBackend:
    kernel = "scripted bigram"
    kernel_build = ""
    max_draft = 32
    prefill_graph = "scripted:dynamic"
    decode_lengths: tuple[int, ...] = ()
    switch_status = None
    softmax_topk = None          # numpy ranks calibration's view

    def __init__(self, script: dict[int, int] | None = None, margin: float = 6.0, seed: int = 0):
        g = np.random.default_rng(seed)
        head = g.standard_normal((V, V), dtype=np.float32)   # head[j, i]: score of j after i
        for i in range(V):
            head[(script or {}).get(i, successor(i)), i] += margin
        self.lm_head = head
        self.config = Config()
        self.fed: list[int] = []                         # tokens fed per forward pass
        self.prefills = 0                                # begin_prefill calls not yet ended

    @staticmethod
    def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        y = np.ascontiguousarray(x @ np.asarray(w, dtype=np.float32).T, dtype=np.float32)
        return y if b is None else y + b

    def new_cache(self, capacity: int) -> KVCache:
        return KVCache(1, 1, 1, capacity)

    def forward(self, tokens: np.ndarray, positions: np.ndarray, cache: KVCache,
                mask: np.ndarray | None = None) -> np.ndarray:
        if cache.length + tokens.shape[0] > cache.capacity:
            raise ValueError("KV cache is full")
        self.fed.append(int(tokens.shape[0]))
        return np.eye(V, dtype=np.float32)[np.asarray(tokens, dtype=np.int64)]

    def logits(self, hidden: np.ndarray) -> np.ndarray:
        return self.linear(hidden, self.lm_head)

    def head_logits(self, hidden: np.ndarray, rows: int) -> np.ndarray:
        return self.linear(hidden, self.lm_head[:rows])

    def begin_prefill(self, total_tokens: int) -> None:
        self.prefills += 1

    def answer_rows(self) -> None:
        pass

    def end_prefill(self) -> None:
        self.prefills -= 1


class Tokenizer:
    """Token i is the word ``t<i>``; EOS is ``</s>``."""
    eos_token = "</s>"
    unk_token_id = None
    chat_template = None

    def convert_tokens_to_ids(self, token: str) -> int | None:
        return EOS if token == self.eos_token else None

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [int(w[1:]) for w in text.split()]

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return "".join(f" t{i}" for i in ids if not (skip_special_tokens and i == EOS))


# an NPU-like curve: a tree costs little more than a plain step, so every method drafts
FLAT_COST = CostModel({0: CostCurve([(1, 10.0), (2, 10.2), (32, 12.0)])})


def scripted_engine(script: dict[int, int] | None = None, window: int = 2048, **kw) -> Engine:
    engine = Engine(BigramBackend(script, **kw), Tokenizer(), Path("scripted"), "scripted", "torch",
                    threads=1, context_window=window, load_seconds=0.0)
    engine._cost = FLAT_COST
    return engine


def chain_prompt(start: int, length: int) -> list[int]:
    """``length`` tokens: a quarter of the default walk from 1, then the walk from ``start``."""
    out = [1]
    while len(out) < length // 4:
        out.append(successor(out[-1]))
    out.append(start)
    while len(out) < length:
        out.append(successor(out[-1]))
    return out
