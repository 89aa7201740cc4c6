"""Deterministic stand-ins for the parts a test is not about (never the only proof of a feature).

``FakeEngine`` replays a request: fixed timestamps, fixed step sizes and sources, so the live panels
render the same figures on every run (snapshots) and the app's fast tests run without the model;
``delay`` paces the steps like a real model would, so a test can act mid-stream. ``HashEmbedder``
stands in for MiniLM where retrieval quality is not what a test checks."""
from __future__ import annotations

import hashlib
import math
import re
import threading
import time

from engine.events import Done, Prefill, Step, Text


class HashEmbedder:
    """Deterministic stand-in for MiniLM where the embedder is not what a test checks: a text's
    vector is its bag of words hashed into 384 signed buckets, normalised, so texts sharing words
    are close and unrelated ones are nearly orthogonal. Same interface as ``memory.Embedder``."""

    DIM = 384
    loaded = True

    def model(self):
        return self

    @property
    def dimension(self) -> int:
        return self.DIM

    def __call__(self, texts):
        out = []
        for text in texts:
            vec = [0.0] * self.DIM
            for word in re.findall(r"\w+", text.lower()):
                h = hashlib.blake2b(word.encode(), digest_size=8).digest()
                vec[int.from_bytes(h[:4], "little") % self.DIM] += 1.0 if h[4] & 1 else -1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


REPLY = ("Speculative decoding drafts tokens from **context** and *history*, then verifies them "
         "in one pass.\n\n```python\nprint('hexa')\n```\n")
SCRIPT = [  # (accepted, sources)
    (3, ("context", "context", "model")), (1, ("model",)), (5, ("history",) * 4 + ("model",)),
    (2, ("calibrated", "model")), (4, ("reuse", "reuse", "context", "model")), (1, ("model",)),
]


class FakeEngine:
    model_name = "SmolLM2-135M-Instruct (fake)"
    backend_name = "torch"
    context_window = 2048

    def __init__(self, reply: str | list[str] = REPLY, delay: float = 0.0):
        # a list: one reply per request, the last one repeated (a UI agent's actions, step by step)
        self.replies = list(reply) if isinstance(reply, list) else None
        self.reply, self.delay = (self.replies[0] if self.replies else reply), delay
        self.indexed: list[list[int]] = []
        self.prompts: list[list[int]] = []
        self.constraints: list = []

    def constraint(self, grammar):
        """The grammar itself: the scripted replies are the test's to keep valid."""
        return grammar

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids) -> str:
        return bytes(ids).decode("utf-8", "ignore")

    def chat_ids(self, messages) -> list[int]:
        return self.encode("".join(f"<{m['role']}>{m['content']}\n" for m in messages) + "<assistant>")

    def index_response(self, token_ids) -> None:
        self.indexed.append(list(token_ids))

    # The same keywords and defaults as ``engine.Engine.generate`` (tests/test_fakes.py checks): a
    # caller passing a keyword the engine does not take fails here as it would on the real one.
    def generate(self, prompt, *, max_new_tokens=256, temperature=0.0, top_p=1.0, seed=None, stop=(),
                 method="vanilla", sources=(), cancel: threading.Event | None = None, chunk_size=256,
                 constraint=None, reuse=True, keep_answer=False, top_k=0, min_p=0.0, penalties=None, continues=0):
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        ids = prompt if prompt and isinstance(prompt[0], int) else self.chat_ids(prompt)
        if self.replies:
            self.reply = self.replies[min(len(self.prompts), len(self.replies) - 1)]
        self.prompts.append(list(ids))
        self.constraints.append(constraint)
        t = 100.0
        yield Prefill(len(ids), len(ids), len(ids), "torch:dynamic", ms=40.0, t=t)
        pieces = self.reply.split(" ")
        out, emitted, stop = [], 0, "eos"
        for i, piece in enumerate(pieces):
            if cancel is not None and cancel.is_set():
                stop = "cancelled"
                break
            if self.delay:
                time.sleep(self.delay)
            accepted, sources = SCRIPT[i % len(SCRIPT)]
            t += 0.025
            yield Step(accepted + 1, accepted, sources, draft_ms=0.4, verify_ms=24.0, t=t)
            delta = piece if i == 0 else " " + piece
            out.append(delta)
            emitted += accepted
            yield Text(delta, t=t)
        text = "".join(out)
        steps = len(out) or 1
        yield Done(stop, text, tuple(self.encode(text)), len(ids), emitted, ttft_ms=65.0, prefill_ms=40.0,
                   prefill_tok_s=len(ids) / 0.04, decode_ms=steps * 25.0, decode_tok_s=emitted / (steps * 0.025),
                   ms_per_token=steps * 25.0 / max(emitted, 1), steps=steps, mean_accepted=emitted / steps,
                   method=method, t=t)
