"""hexa's logits against llama.cpp's on the same GGUF, position by position.

Both are fed the same token sequence one token a step (plain decoding, teacher-forced): hexa in
its decoding arithmetic (codes times 8-bit activations), llama.cpp in its own; or, with
``prompt_rows``, hexa as it prefills a prompt (chunks of up to ``PROMPT_CHUNK`` rows between
``begin_prefill`` and ``end_prefill``: bf16 on AMX tiles, a K-quant's rows with one scale per 256
inputs on AMD's 512-bit tiles, else decoding's arithmetic). Reported: top-1
agreement (the fraction of positions whose argmax is the same), the largest |difference| of any
logit, and the largest difference relative to that position's logit spread (max - min), so a
model with large logits (Gemma's 262k vocabulary) and one with small ones compare alike; and,
where the top-1s differ, how far under its own top-1 llama.cpp put hexa's (relative to the same
spread): random-weight files have flat logits, and a disagreement inside the logits' difference is
a near tie, not a wrong token.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Agreement:
    positions: int
    top1: float           # share of positions where both argmaxes agree
    max_abs: float        # largest |hexa - llama.cpp| over every logit of every position
    max_rel: float        # the same over each position's logit range (max - min of llama.cpp's row)
    mean_abs: float
    tie_gap: float = 0.0  # where the argmaxes differ: llama.cpp's top-1 logit minus its logit of hexa's, over the range (largest)

    def line(self) -> str:
        ties = f"; where they differ, hexa's choice within {self.tie_gap:.2%} of llama.cpp's top-1" if self.top1 < 1 else ""
        return (f"{self.positions} positions: top-1 agreement {self.top1:.1%}, max |Δ| {self.max_abs:.3g} "
                f"({self.max_rel:.2%} of the logit range), mean |Δ| {self.mean_abs:.3g}{ties}")


def hexa_logits(engine, ids: list[int]) -> np.ndarray:
    """[len(ids), vocab]: the logits after each token, fed one a step in decoding arithmetic."""
    model = engine.model
    cache = model.new_cache(len(ids) + 1)
    rows = []
    for i, token in enumerate(ids):
        hidden = model.forward(np.array([token], np.int64), np.array([i], np.int64), cache)
        cache.commit(1)
        rows.append(model.logits(hidden)[0].copy())
    return np.stack(rows)


PROMPT_CHUNK = 64   # rows a forward pass takes at most (hexa.h's HEXA_FORWARD_ROWS)


def prompt_logits(engine, ids: list[int]) -> np.ndarray:
    """[len(ids), vocab]: the logits of every row of the prompt ``ids``, prefilled as a prompt."""
    model = engine.model
    cache = model.new_cache(len(ids) + 1)
    rows = []
    model.begin_prefill(len(ids))
    try:
        for start in range(0, len(ids), PROMPT_CHUNK):
            chunk = ids[start:start + PROMPT_CHUNK]
            n = len(chunk)
            mask = np.tri(n, start + n, start, dtype=bool)   # causal over the kept rows and the chunk
            hidden = model.forward(np.array(chunk, np.int64), np.arange(start, start + n, dtype=np.int64), cache, mask)
            cache.commit(n)
            rows.append(model.logits(hidden).copy())
    finally:
        model.end_prefill()
    return np.concatenate(rows)


def compare(engine, ids: list[int], skip: int = 0, prompt_rows: bool = False) -> Agreement:
    """Agreement over positions skip..len(ids)-1 (the first ones condition little); hexa's logits
    from decoding steps, or with ``prompt_rows`` from a prefill of ``ids``."""
    from .llamacpp import LlamaCppMethod

    peer = LlamaCppMethod(engine)
    ours = (prompt_logits if prompt_rows else hexa_logits)(engine, ids)[skip:]
    with tempfile.TemporaryDirectory(prefix="hexa-logits-") as tmp:
        path = Path(tmp) / "llamacpp.npy"
        peer.worker.ask("logits", ids=list(ids), path=str(path))
        theirs = np.load(path, mmap_mode="r")[skip:]
        diff = np.abs(ours - theirs)
        spread = theirs.max(axis=1) - theirs.min(axis=1)
        mine, top = ours.argmax(1), theirs.argmax(1)
        at = np.arange(len(top))
        gaps = (theirs[at, top] - theirs[at, mine]) / spread
        return Agreement(len(ours), float((mine == top).mean()), float(diff.max()),
                         float((diff.max(axis=1) / spread).max()), float(diff.mean()), float(gaps.max()))


def main(argv: list[str] | None = None) -> int:
    """``python -m engine.bench.agreement --model FILE [--positions N]``: hexa's logits against
    llama.cpp's on the same GGUF, teacher-forced on the first dev-set summary prompt."""
    import argparse
    import json
    import os

    from ..engine import Engine

    p = argparse.ArgumentParser(prog="python -m engine.bench.agreement", description=main.__doc__.split(":")[0])
    p.add_argument("--model", required=True, metavar="FILE")
    p.add_argument("--data", default="../shared/bench/dev.jsonl", metavar="FILE.jsonl")
    p.add_argument("--positions", type=int, default=150)
    p.add_argument("--prompt-rows", action="store_true", help="hexa's logits from a prefill of the ids, not decoding steps")
    p.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "hexa-agreement"), metavar="DIR")
    a = p.parse_args(argv)
    engine = Engine.load(a.model, Path(a.cache), threads=2)
    cases = (json.loads(line) for line in open(a.data) if line.strip())
    text = next(c["turns"][0] for c in cases if c.get("task") == "summary")
    bos = engine.tokenizer.bos_token or "<|endoftext|>"
    ids = [engine.tokenizer.convert_tokens_to_ids(bos)] + engine.encode(text)[:a.positions]
    print(f"{Path(a.model).name} ({engine.model.kernel}, KV {np.dtype(engine.model.kv_dtype).name}): "
          f"{'prompt rows' if a.prompt_rows else 'decoding rows'}: {compare(engine, ids, skip=1, prompt_rows=a.prompt_rows).line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
