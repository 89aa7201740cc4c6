"""How well retrieval picks what it sends: precision and recall of the injected context on a
labelled set, before (the k nearest, whatever their similarity) and after (``retrieval.Policy``),
and the calibration of ``RELEVANCE_MIN``.

    python -m memory.relevance [--set tests/memory/data/relevance.json] [--json OUT]

The set holds notes (past turns and document chunks) and requests, each with the notes that would
help answer it; every other (request, note) pair is labelled not relevant. The notes go into a
temporary store embedded by the real MiniLM. The thresholds (one for past turns, one for document
passages) are chosen on half of the requests (the even ones: best F1, the middle of the best
plateau) and reported on the other half too, so the table is not only a measure of the data it
was fitted on.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from .chunking import estimate_tokenizer
from .memory import Memory
from .retrieval import Policy, budget_for

DEFAULT_SET = Path(__file__).resolve().parent.parent / "tests" / "memory" / "data" / "relevance.json"
K = 4                     # items the assistant asks for
LEGACY_BUDGET = 512       # tokens the assistant gave every request before
BUDGET_CAP = 384          # the assistant's cap now (Settings.retrieval_tokens)


@dataclass
class Scores:
    injected: int = 0
    correct: int = 0
    relevant: int = 0
    empty_queries: int = 0     # requests with no relevant note...
    clean: int = 0             # ...to which nothing was sent
    tokens: int = 0            # context tokens sent in all
    queries: int = 0

    @property
    def precision(self) -> float:
        return self.correct / self.injected if self.injected else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.relevant if self.relevant else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def row(self, name: str) -> str:
        return (f"| {name} | {self.queries} | {self.injected} | {self.precision:.2f} | {self.recall:.2f} "
                f"| {self.clean}/{self.empty_queries} | {self.tokens / max(1, self.queries):.0f} |")


HEADER = ("| policy | requests | notes sent | precision | recall | nothing sent when nothing relevant "
          "| context tokens / request |\n|---|---|---|---|---|---|---|")


class _CachedEmbedder:
    """The store's embedder, remembering query vectors (a threshold sweep asks the same ones)."""

    def __init__(self, inner):
        self.inner, self.cache = inner, {}

    def __call__(self, texts):
        missing = [t for t in texts if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner(missing)))
        return [self.cache[t] for t in texts]

    def __getattr__(self, name):
        return getattr(self.inner, name)


class LabelledStore:
    """The set's notes in a store; ``score(policy, queries)`` runs the assistant's request."""

    def __init__(self, data: dict, folder: Path, embedder=None):
        self.data = data
        self.mem = Memory.open(folder, tokenizer=estimate_tokenizer, **({"embedder": embedder} if embedder else {}))
        self.note_of: dict[tuple[str, int], str] = {}
        sessions: dict[str, int] = {}
        for note in data["notes"]:
            if note["kind"] == "turn":
                sid = sessions.get(note["title"]) or self.mem.new_session("assistant", note["title"]).id
                sessions[note["title"]] = sid
                user = self.mem.add_message(sid, "user", note["user"])
                self.mem.add_message(sid, "assistant", note["assistant"])
                self.note_of[("message", user.id)] = note["id"]
            else:
                path = folder / f"{Path(note['title']).stem}.md"   # the text, whatever the name says
                path.write_text(note["text"], encoding="utf-8")
                doc = self.mem.add_document(path)
                chunk_id = self.mem.store.scalar("SELECT id FROM chunks WHERE doc_id = ?", (doc.id,))
                self.note_of[("chunk", chunk_id)] = note["id"]
        self.mem.index.embedder = _CachedEmbedder(self.mem.index.embedder)

    def close(self) -> None:
        self.mem.close()

    def sent(self, query: str, policy: Policy, legacy_budget: bool = False) -> list:
        budget = LEGACY_BUDGET if legacy_budget else budget_for(self.mem.count_tokens(query), BUDGET_CAP)
        return self.mem.context_for(query, k=K, token_budget=budget, policy=policy)

    def score(self, policy: Policy, queries: list[dict], legacy_budget: bool = False) -> Scores:
        s = Scores()
        for q in queries:
            items = self.sent(q["q"], policy, legacy_budget)
            got = {self.note_of.get((it.kind, it.ref_id)) for it in items}
            s.queries += 1
            s.injected += len(items)
            s.correct += len(got & set(q["relevant"]))
            s.relevant += len(q["relevant"])
            s.tokens += sum(it.tokens for it in items)
            if not q["relevant"]:
                s.empty_queries += 1
                s.clean += not items
        return s


def calibrate(store: LabelledStore, queries: list[dict], lo: float = 0.2, hi: float = 0.7) -> tuple[float, float]:
    """(turn, passage) thresholds with the best F1 on ``queries``: the point of the best plateau
    nearest its middle. The candidates are ranked once; a pair of thresholds keeps the ``K``
    best above them (the budget and near-duplicates, which the table applies, are left out)."""
    ranked = []
    for q in queries:
        items = store.mem.context_for(q["q"], k=len(store.data["notes"]), token_budget=10**6,
                                      policy=Policy.legacy())
        ranked.append((q, [(it.kind, it.score, store.note_of.get((it.kind, it.ref_id)) in q["relevant"])
                           for it in items]))
    grid = [round(lo + i / 100, 2) for i in range(0, int(round((hi - lo) * 100)) + 1, 2)]

    def f1(tm: float, tc: float) -> float:
        s = Scores()
        for q, items in ranked:
            sent = [rel for kind, score, rel in items if score >= (tc if kind == "chunk" else tm)][:K]
            s.injected, s.correct, s.relevant = s.injected + len(sent), s.correct + sum(sent), s.relevant + len(q["relevant"])
        return s.f1

    scores = {(tm, tc): f1(tm, tc) for tm in grid for tc in grid}
    best = max(scores.values())
    plateau = [p for p, v in scores.items() if v >= best - 1e-9]
    mid = (sum(p[0] for p in plateau) / len(plateau), sum(p[1] for p in plateau) / len(plateau))
    return min(plateau, key=lambda p: (p[0] - mid[0]) ** 2 + (p[1] - mid[1]) ** 2)


def table(store: LabelledStore, thresholds: tuple[float, float] | None = None) -> dict:
    queries = store.data["queries"]
    fit, held = queries[0::2], queries[1::2]
    chosen = calibrate(store, fit) if thresholds is None else thresholds
    after = replace(Policy(), min_score=chosen[0], min_chunk_score=chosen[1])
    rows = {
        "before (all)": store.score(Policy.legacy(), queries, legacy_budget=True),
        "before (held-out half)": store.score(Policy.legacy(), held, legacy_budget=True),
        "after (all)": store.score(after, queries),
        "after (held-out half)": store.score(after, held),
    }
    return {"threshold": chosen, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.relevance", description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=DEFAULT_SET, help="the labelled set (JSON)")
    ap.add_argument("--thresholds", type=float, nargs=2, default=None, metavar=("TURN", "PASSAGE"),
                    help="use these thresholds instead of calibrating")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    data = json.loads(args.set.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="hexa-relevance-") as tmp:
        store = LabelledStore(data, Path(tmp))
        try:
            result = table(store, tuple(args.thresholds) if args.thresholds else None)
        finally:
            store.close()
    pairs = len(data["queries"]) * len(data["notes"])
    relevant = sum(len(q["relevant"]) for q in data["queries"])
    print(f"{len(data['queries'])} requests x {len(data['notes'])} notes = {pairs} labelled pairs "
          f"({relevant} relevant); thresholds: turn {result['threshold'][0]:.2f}, passage "
          f"{result['threshold'][1]:.2f} (calibrated on the even requests)")
    print(HEADER)
    for name, s in result["rows"].items():
        print(s.row(name))
    if args.json:
        args.json.write_text(json.dumps({"threshold": result["threshold"], "rows": {
            k: {**vars(v), "precision": v.precision, "recall": v.recall} for k, v in result["rows"].items()}},
            indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
