"""Measuring the device's TTFT line with the real engine (a few prompt lengths, cold prefill)."""
from __future__ import annotations

import time
from typing import Callable, Sequence

from .models import DeviceModel

LENGTHS = (64, 256, 512, 1024)


def measure_device(engine, lengths: Sequence[int] = LENGTHS, repeats: int = 2, decode_tokens: int = 32,
                   log: Callable[[str], None] | None = None) -> DeviceModel:
    """Prefill prompts of ``lengths`` tokens (no kept prefix: a cold start, what a new request
    pays) and fit T_d(l) = k·l + c on the best of ``repeats`` runs per length (the minimum: the
    machine is shared, and a busy moment is not the device's speed)."""
    vocab = engine.model.config.vocab_size
    points, rates = [], []
    for n in lengths:
        n = min(n, engine.context_window - decode_tokens - 1)
        ids = [(i * 7919 + 13) % (vocab - 256) + 128 for i in range(n)]   # fixed, text-like spread of ids
        best = None
        for _ in range(repeats):
            done = None
            for ev in engine.generate(ids, max_new_tokens=decode_tokens, reuse=False):
                done = ev
            best = done if best is None or done.ttft_ms < best.ttft_ms else best
            if done.decode_tok_s:
                rates.append(done.decode_tok_s)
        points.append((n, best.ttft_ms / 1000))
        if log:
            log(f"device TTFT at {n} tokens: {best.ttft_ms:.0f} ms")
    rates.sort()
    source = (f"measured {time.strftime('%Y-%m-%d')}: {engine.model_name}, {engine.threads} threads, "
              f"{engine.backend_name}")
    return DeviceModel.fit(points, rates[len(rates) // 2] if rates else 0.0, source)
