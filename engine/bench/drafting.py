"""Drafting micro-benchmark on synthetic copy-heavy data (no model): `python -m engine.bench.drafting`.

An ``OracleModel`` stands in for the target model: on the reference output it predicts the
reference's next token; off it (inside a wrong draft) it predicts what followed the same
bigram/unigram in the reference, like a model that keeps writing the phrase it has in mind.
That is enough to exercise every source, the tree, acceptance and reuse, and to time them.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass, field

import numpy as np

from ..decoding.drafting.accept import greedy_accept
from ..decoding.drafting.calibration import CalibratedTree, CalibrationConfig
from ..decoding.drafting.drafter import Drafter


class OracleModel:
    def __init__(self, prompt: list[int], target: list[int]) -> None:
        self.prompt, self.target = prompt, target
        self.bi: dict[tuple[int, int], int] = {}
        self.uni: dict[int, int] = {}
        text = prompt + target
        for i in range(len(text) - 1, 1, -1):     # first occurrence wins: iterate backwards
            self.bi[(text[i - 2], text[i - 1])] = text[i]
            self.uni[text[i - 1]] = text[i]

    def predict(self, gen: list[int], path: list[int]) -> int:
        """Next token after prompt + gen + path (gen is always on the reference: lossless)."""
        pos = len(gen) + len(path)
        if pos < len(self.target) and self.target[len(gen):pos] == path:
            return self.target[pos]
        seq_tail = (self.prompt + gen + path)[-2:]
        return self.bi.get(tuple(seq_tail), self.uni.get(seq_tail[-1], 0))

    def topk_view(self, k: int, rng: random.Random, vocab: int) -> tuple[np.ndarray, np.ndarray]:
        """A prefill top-k view: the model's own next token first (p 0.6), then noise."""
        T = len(self.prompt)
        ids = np.empty((T, k), dtype=np.int64)
        for i in range(T):
            own = self.bi.get(tuple(self.prompt[max(0, i - 1):i + 1]), self.uni.get(self.prompt[i], 0))
            ids[i] = [own] + [rng.randrange(vocab) for _ in range(k - 1)]
        probs = np.tile(np.array([0.6, 0.2, 0.1, 0.05] + [0.01] * max(0, k - 4), np.float32)[:k], (T, 1))
        return ids, probs


def synthetic_request(rng: random.Random, prompt_len: int, out_len: int, vocab: int = 49152,
                      edit_rate: float = 0.08) -> tuple[list[int], list[int], list[list[int]]]:
    """Repetitive prompt (phrases drawn from a small pool); output copies prompt spans with
    insertions/substitutions (the cases reuse and calibration target); history = similar outputs."""
    pool = [[rng.randrange(vocab) for _ in range(rng.randint(3, 12))] for _ in range(60)]
    prompt: list[int] = []
    while len(prompt) < prompt_len:
        prompt += rng.choice(pool) + [rng.randrange(vocab)]
    prompt = prompt[:prompt_len]

    def output() -> list[int]:
        out: list[int] = []
        while len(out) < out_len:
            s = rng.randrange(len(prompt) - 20)
            for t in prompt[s:s + rng.randint(5, 30)]:
                r = rng.random()
                if r < edit_rate / 2:
                    out.append(rng.randrange(vocab))          # inserted token
                    out.append(t)
                elif r < edit_rate:
                    out.append(rng.randrange(vocab))          # substituted token
                else:
                    out.append(t)
            out.append(rng.randrange(vocab))
        return out[:out_len]

    return prompt, output(), [output() for _ in range(3)]


@dataclass
class SimResult:
    steps: int = 0
    tokens: int = 0
    draft_ms: list[float] = field(default_factory=list)      # wall time of propose + observe
    draft_cpu_ms: list[float] = field(default_factory=list)  # thread CPU time (immune to other processes)
    calib_ms_per_token: float = 0.0
    by_source: dict[str, int] = field(default_factory=dict)
    trees: list[tuple[list[int], list[int]]] = field(default_factory=list)   # each step's (tokens, parents)
    lossless: bool = True

    @property
    def mean_accepted(self) -> float:
        return self.tokens / max(1, self.steps)


def simulate(prompt, target, history, budget=32, max_depth=16, k=4, seed=0, **drafter_kw) -> SimResult:
    rng = random.Random(seed)
    model = OracleModel(prompt, target)
    res = SimResult()
    d = Drafter(prompt, history, **drafter_kw)
    if d.use_calibration:
        ids, probs = model.topk_view(k, rng, 49152)
        stats = d.set_calibration(ids, probs)
        res.calib_ms_per_token = stats.ms_per_token
    gen = [target[0]]
    d.observe(gen)
    while len(gen) < len(target):
        c0, t0 = time.thread_time(), time.perf_counter()
        tree = d.propose(budget, max_depth)
        c1, t1 = time.thread_time(), time.perf_counter()
        res.trees.append((tree.token_list, tree.parent_list))
        paths = [[tree.token_list[j] for j in tree.path_to(i)[1:]] for i in range(tree.size)]
        next_ids = [model.predict(gen, p) for p in paths]
        path, bonus = greedy_accept(tree, next_ids)
        emitted = [tree.token_list[i] for i in path[1:]] + [bonus]
        c2, t2 = time.thread_time(), time.perf_counter()
        d.observe(emitted, tree, next_ids)
        c3, t3 = time.thread_time(), time.perf_counter()
        res.draft_ms.append((t1 - t0 + t3 - t2) * 1e3)
        res.draft_cpu_ms.append((c1 - c0 + c3 - c2) * 1e3)
        for i in path[1:]:
            res.by_source[tree.sources[i]] = res.by_source.get(tree.sources[i], 0) + 1
        gen += emitted
        res.steps += 1
        res.tokens += len(emitted)
    res.lossless = gen[:len(target)] == target
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--prompt", type=int, default=1500)
    ap.add_argument("--out", type=int, default=500)
    ap.add_argument("--budget", type=int, default=32)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-gc-freeze", action="store_true",
                    help="leave the import-time objects in the young GC generations (full collections "
                         "then pause at random steps: ~70 ms with torch's ~170k objects, when it was imported)")
    a = ap.parse_args(argv)
    if not a.no_gc_freeze:
        import gc
        gc.collect()
        gc.freeze()
    rng = random.Random(0)
    prompt, target, history = synthetic_request(rng, a.prompt, a.out)
    rows = []
    configs = {
        "linear (SAM)": dict(mode="linear", use_calibration=False, use_reuse=False),
        "tree ctx+hist": dict(use_calibration=False, use_reuse=False),
        "tree +calib": dict(use_reuse=False),
        "tree +calib+reuse": dict(),
    }
    for name, kw in configs.items():
        r = simulate(prompt, target, history, budget=a.budget, **kw)
        ms, cpu = sorted(r.draft_ms), sorted(r.draft_cpu_ms)
        rows.append(dict(config=name, steps=r.steps, mean_accepted=round(r.mean_accepted, 3),
                         draft_ms_mean=round(sum(ms) / len(ms), 3), draft_ms_p99=round(ms[int(0.99 * (len(ms) - 1))], 3),
                         draft_ms_max=round(ms[-1], 3), cpu_ms_p99=round(cpu[int(0.99 * (len(cpu) - 1))], 3),
                         cpu_ms_max=round(cpu[-1], 3), calib_ms_per_token=round(r.calib_ms_per_token, 4),
                         lossless=r.lossless, accepted_by_source=r.by_source))
    print(f"prompt {a.prompt} + output {a.out} tokens, budget {a.budget}")
    print(f"{'config':20} {'steps':>6} {'tok/step':>9} {'draft ms':>9} {'p99':>7} {'max':>7} "
          f"{'cpu p99':>8} {'cpu max':>8} {'calib ms/tok':>13}  sources")
    for r in rows:
        print(f"{r['config']:20} {r['steps']:6d} {r['mean_accepted']:9.3f} {r['draft_ms_mean']:9.3f} "
              f"{r['draft_ms_p99']:7.3f} {r['draft_ms_max']:7.3f} {r['cpu_ms_p99']:8.3f} {r['cpu_ms_max']:8.3f} "
              f"{r['calib_ms_per_token']:13.4f}  {r['accepted_by_source']}")
    # calibration build cost alone, k = 4, repetitive and non-repetitive prompts
    vocab = 49152
    for label, p in (("repetitive", prompt), ("random", [rng.randrange(vocab) for _ in range(a.prompt)])):
        ids, probs = OracleModel(p, p[:1]).topk_view(4, rng, vocab)
        z = np.random.default_rng(0).standard_normal((len(p), 4), dtype=np.float32) * 2
        z = np.exp(z - z.max(-1, keepdims=True))
        probs = -np.sort(-(z / z.sum(-1, keepdims=True)), axis=-1)      # softmax, descending
        ct = CalibratedTree.build(p, ids, probs, CalibrationConfig(k=4))
        st = ct.stats
        t0 = time.perf_counter()
        for key in ct.keys():   # every key's tree, as if each were drafted from (a bound: few are)
            ct.tree(key)
        search_ms = (time.perf_counter() - t0) * 1e3
        print(f"calibration T={st.prompt_tokens} k=4 {label:10}: {st.build_ms:7.1f} ms "
              f"({st.ms_per_token:.4f} ms/token) before the first token; {search_ms:.1f} ms to search all "
              f"{st.keys} keys: {st.nodes} nodes, {st.nbytes / 1e6:.2f} MB")
        rows.append(dict(config=f"calibration-{label}", build_ms=st.build_ms, ms_per_token=st.ms_per_token,
                         search_all_ms=search_ms, nodes=st.nodes, nbytes=st.nbytes))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
