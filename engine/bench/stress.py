"""Stress mode for losslessness: random draft-tree shapes and sizes, every path row's logits
compared bit for bit with a plain step's.

Speculative decoding is lossless only if a token's logits in a verification equal a plain step's
at the same position, whatever the tree around it: its size, its order, where it falls against
the kernels' tiles and attention chunks. Ordinary runs draw few shapes (a dev-set run accepts
1.5-1.7 tokens a step on trees sized by the cost curve), so a shape-dependent bit can hide for
thousands of steps. Here each request is decoded twice on one engine: plain (``vanilla``), then
with the method's drafts plus random decoys (random tokens on random parents, a random total
size up to the backend's cap, nodes in a random topological order). ``Recorder`` keeps every
decoding pass's logits; each row of a tree whose path matches the plain tokens must carry the
plain step's logits at that position, bit for bit, and both runs must emit the same tokens.

    python -m engine.bench.stress --data ../shared/bench/dev.jsonl --n 6 --max-new-tokens 96

runs every case with and without history, cold and warm (a kept prefix), and with a
constraint; it prints the steps, rows and mismatches, and exits 1 on any mismatch.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..decoding.drafting.tree import DraftTree, assemble
from ..events import Done, Step


class Recorder:
    """A backend that keeps the logits of every decoding pass (prefill's are not decoding rows)."""

    def __init__(self, model):
        self.model = model
        self.passes: list[tuple[int, np.ndarray, np.ndarray | None, np.ndarray]] = []
        self._last = None
        self._prefilling = False

    def __getattr__(self, name):
        return getattr(self.model, name)

    def begin_prefill(self, total: int) -> None:
        self._prefilling = True
        self.model.begin_prefill(total)

    def end_prefill(self) -> None:
        self._prefilling = False
        self.model.end_prefill()

    def forward(self, tokens, positions, cache, mask=None):
        self._last = (cache.length, tokens.copy(), None if mask is None else mask[:, cache.length:].copy())
        return self.model.forward(tokens, positions, cache, mask)

    def logits(self, hidden):
        out = self.model.logits(hidden)
        if not self._prefilling and self._last is not None and len(out) == len(self._last[1]):
            self.passes.append((*self._last, out.copy()))
        return out

    def rows(self):
        """(position, token path from the pass's root to the row, logits) of every row recorded."""
        for start, tokens, tree, logits in self.passes:
            toks = tokens.tolist()
            for i in range(len(toks)):
                path = [toks[j] for j in range(i + 1) if tree is None or bool(tree[i, j])]
                yield start + len(path) - 1, start, path, logits[i]


class RandomTrees:
    """Wraps a speculator: its tree plus random decoys, in a random topological order."""

    def __init__(self, inner, rng: random.Random, cap: int, decoys: list[int], vocab: int):
        self.inner, self.rng, self.decoys, self.vocab = inner, rng, decoys, vocab
        self.max_tree = cap
        self.calibration = inner.calibration
        self.steps = 0
        self.sizes: list[int] = []

    def start(self, prompt_ids, first_token, topk):
        return self.inner.start(prompt_ids, first_token, topk)

    def propose(self) -> DraftTree:
        tree = self.inner.propose()
        rng = self.rng
        toks, parents = list(tree.token_list), list(tree.parent_list)
        sources, cum = list(tree.sources), list(tree.cum)
        target = rng.randint(len(toks), self.max_tree + 1)
        while len(toks) < target:
            p = rng.randrange(len(toks))
            sibs = {toks[c] for c in range(len(toks)) if parents[c] == p}
            t = rng.choice(self.decoys) if rng.random() < 0.7 else rng.randrange(self.vocab)
            if t in sibs:
                continue
            toks.append(t); parents.append(p); sources.append("context"); cum.append(cum[p] * 0.1)
        # a random topological order, the root first
        order, ready = [0], [c for c in range(1, len(toks)) if parents[c] == 0]
        while ready:
            i = ready.pop(rng.randrange(len(ready)))
            order.append(i)
            ready += [c for c in range(1, len(toks)) if parents[c] == i]
        at = {old: new for new, old in enumerate(order)}
        self.steps += 1
        self.sizes.append(len(toks))
        return assemble([toks[o] for o in order], [-1] + [at[parents[o]] for o in order[1:]],
                        [sources[o] for o in order], [cum[o] for o in order], [1.0] * len(order))

    def observe(self, tree, emitted, next_ids, verify_ms=None, past=0):
        self.inner.observe(tree, emitted, next_ids, None, past)


@dataclass
class Report:
    requests: int = 0
    steps: int = 0
    rows: int = 0                 # path rows compared bit for bit
    token_mismatches: list[str] = field(default_factory=list)
    logit_mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.token_mismatches and not self.logit_mismatches


def _run(engine, ids, method, **kw) -> tuple[Done, Recorder]:
    model = engine.model
    engine.model = rec = Recorder(model)
    try:
        done = None
        for ev in engine.generate(ids, method=method, **kw):
            if isinstance(ev, Done):
                done = ev
    finally:
        engine.model = model
    return done, rec


def stress_case(engine, ids: list[int], method: str, rng: random.Random, report: Report, label: str,
                max_new: int, constraint=None, warm: bool = False, history: bool = False) -> None:
    """One prompt decoded plain, then by ``method`` on random trees; compares tokens and rows."""
    kw = dict(max_new_tokens=max_new, constraint=constraint)
    engine.forget_prefixes()
    plain, rec = _run(engine, ids, "vanilla", reuse=warm, **kw)
    reference = {pos: row for pos, _, path, row in rec.rows()}
    seq = list(ids) + list(plain.token_ids)
    original = engine._speculator
    cap = engine.model.max_draft

    def speculator(m, spec, sources):
        inner = original(m, spec, sources)
        return RandomTrees(inner, rng, cap, sorted(set(ids)), engine.model.config.vocab_size)
    engine._speculator = speculator
    try:
        if not warm:
            engine.forget_prefixes()
        done, rec = _run(engine, ids, method, reuse=warm, **kw)
    finally:
        del engine._speculator
    report.requests += 1
    report.steps += len(rec.passes)
    if done.token_ids != plain.token_ids:
        first = next((i for i, (a, b) in enumerate(zip(done.token_ids, plain.token_ids)) if a != b),
                     min(len(done.token_ids), len(plain.token_ids)))
        report.token_mismatches.append(f"{label}: tokens differ from vanilla's at token {first}")
    for pos, start, path, row in rec.rows():
        if pos not in reference or seq[start:start + len(path)] != path:
            continue
        report.rows += 1
        if not np.array_equal(row, reference[pos]):
            diff = float(np.abs(row - reference[pos]).max())
            report.logit_mismatches.append(f"{label}: position {pos} (pass at {start}, depth {len(path) - 1}) "
                                           f"logits differ by up to {diff:.3g}")
    if history:
        engine.index_response(plain.token_ids)


def free_text(engine):
    """A constraint that leaves most of an answer free (a quoted line after a fixed opening)."""
    from ..decoding.grammar import Free, Grammar
    return engine.constraint(Grammar([["Answer: ", Free(400, "\n"), "\n"], ["I cannot say."]]))


def stress(engine, prompts: list[tuple[str, list[int]]], method: str = "hexa", max_new: int = 64,
           seed: int = 0, variants: tuple[str, ...] = ("cold", "history", "warm", "constrained"),
           say=None) -> Report:
    """Every prompt under every variant: cold, with history (each plain answer indexed for the
    next prompts), warm (a kept prefix: the plain run keeps the prompt, the method's run reuses
    it), constrained (``free_text``)."""
    rng = random.Random(seed)
    report = Report()
    constraint = free_text(engine) if "constrained" in variants else None
    for v in variants:
        for name, ids in prompts:
            stress_case(engine, ids, method, rng, report, f"{name} [{v}]", max_new,
                        constraint=constraint if v == "constrained" else None, warm=v == "warm",
                        history=v == "history")
            if say:
                say(f"{name} [{v}]: {report.steps} passes, {report.rows} rows, "
                    f"{len(report.token_mismatches) + len(report.logit_mismatches)} mismatches so far")
    return report


def dev_prompts(engine, path: Path, n: int, tasks: tuple[str, ...] = ("summary", "rag", "chat", "qa"),
                max_prompt: int = 1800) -> list[tuple[str, list[int]]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = []
    for task in tasks:
        for r in [r for r in rows if r["task"] == task][:n]:
            ids = engine.chat_ids([{"role": "user", "content": r["turns"][0]}])
            out.append((r["id"], ids[-max_prompt:]))
    return out


def main(argv: list[str] | None = None) -> int:
    from .. import Engine

    ap = argparse.ArgumentParser(prog="python -m engine.bench.stress", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--n", type=int, default=2, help="prompts per task")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--method", default="hexa")
    ap.add_argument("--model", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=None)
    a = ap.parse_args(argv)
    from platformdirs import user_cache_dir
    engine = Engine.load(a.model, a.cache or Path(user_cache_dir("hexa")) / "stress")
    report = stress(engine, dev_prompts(engine, a.data, a.n), a.method, a.max_new_tokens, a.seed,
                    say=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"{report.requests} requests, {report.steps} decoding passes, {report.rows} path rows compared "
          f"bit for bit: {len(report.token_mismatches)} token and {len(report.logit_mismatches)} logit mismatches")
    for line in (report.token_mismatches + report.logit_mismatches)[:20]:
        print("  " + line)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
