"""Deterministic stand-ins used ONLY for rendering snapshots (pilot tests use the real Engine/Memory).

``FakeEngine`` replays a scripted request: fixed timestamps, fixed step sizes and sources, so the
live panels render the same figures on every run.
"""
from __future__ import annotations

import threading
import time

from engine.events import Done, Prefill, Step, Text

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

    def __init__(self, reply: str = REPLY, delay: float = 0.0):
        self.reply, self.delay = reply, delay
        self.indexed: list[list[int]] = []

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids) -> str:
        return bytes(ids).decode("utf-8", "ignore")

    def chat_ids(self, messages) -> list[int]:
        return self.encode("".join(f"<{m['role']}>{m['content']}\n" for m in messages) + "<assistant>")

    def index_response(self, token_ids) -> None:
        self.indexed.append(list(token_ids))

    def generate(self, prompt, *, max_new_tokens=256, cancel: threading.Event | None = None, **_):
        ids = prompt if prompt and isinstance(prompt[0], int) else self.chat_ids(prompt)
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
        steps = min(len(pieces), len(out)) or 1
        yield Done(stop, text, tuple(self.encode(text)), len(ids), emitted, ttft_ms=65.0, prefill_ms=40.0,
                   prefill_tok_s=len(ids) / 0.04, decode_ms=steps * 25.0, decode_tok_s=emitted / (steps * 0.025),
                   ms_per_token=steps * 25.0 / max(emitted, 1), steps=steps, mean_accepted=emitted / steps,
                   method="hexa", t=t)
