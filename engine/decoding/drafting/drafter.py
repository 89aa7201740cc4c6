"""Per-request drafter: owns the drafting sources and turns them into one draft tree per step.

Sources
  context     local suffix automaton over prompt + generated tokens (SAM-Decoding "local")
  history     suffix automata over earlier responses: the engine's corpus (shared across requests,
              see ``history.HistoryIndex``) and optionally one over the request's own sources
  calibrated  in-context distribution calibration tree built from the prefill top-k view
  reuse       verified tails of rejected drafts

Loop contract (one request):
    d = Drafter(prompt_ids, history, sources_index=extra)   # after tokenization
    d.set_calibration(topk_ids, topk_probs)      # after prefill (optional)
    d.observe([first_token])                     # the token sampled from the prefill logits
    while not done:
        tree = d.propose(budget, max_depth)      # tree.tokens[0] == last committed token
        ...verify: feed tree.tokens at positions past_len + tree.depths with tree.mask...
        path, bonus = greedy_accept(tree, next_ids)   # or sample_accept(tree, probs)
        d.observe([tree.token_list[i] for i in path[1:]] + [bonus], tree, next_ids)

Confidence estimates are heuristics (match length, occurrence ratios, calibrated probabilities)
rescaled per source by that source's observed acceptance in this request.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ...events import DRAFT_SOURCES
from .calibration import CalibratedTree, CalibrationConfig, CalibrationStats
from .reuse import ReuseBuffer, best_run
from .suffix_automaton import Continuation, Matcher, SuffixAutomaton
from .tree import (ALPHA0, AdaptiveCutoff, Candidate, ConfidenceMap, DraftTree, TreeBuilder, best_first_step,
                   first_step_ceiling, pay_threshold, pays, root_only)

_MAX_P = 0.98


def match_confidence(match_len: int) -> float:
    """How much a suffix match of this length is worth: 1 token 0.4, 4 tokens 0.73, 16 tokens 0.91."""
    return match_len / (match_len + 1.5)


def build_history(sequences: Sequence[Sequence[int]]) -> SuffixAutomaton:
    """A history automaton over many sequences.  Keep it across requests and ``add_sequence``
    each finished response *between* requests (a Drafter's matcher assumes it does not change
    while the request runs).  Eager counts: building is no slower than lazy + one count pass,
    and a later ``add_sequence`` costs O(its length), not an O(total) recount."""
    sam = SuffixAutomaton(counts="eager")
    for s in sequences:
        sam.add_sequence([int(t) for t in s])
    return sam


class Drafter:
    def __init__(self, prompt_ids: Sequence[int] | np.ndarray,
                 history_sources: Sequence[Sequence[int]] | SuffixAutomaton | None = None,
                 use_context: bool = True, use_history: bool = True, use_calibration: bool = True,
                 use_reuse: bool = True, calibration: CalibrationConfig | None = None, *,
                 mode: str = "tree", linear_len: int = 16,
                 alpha0: float = ALPHA0, tc: float = 0.9, max_branches: int = 4,
                 min_match_context: int = 1, min_match_history: int = 2,
                 cost_curve: Callable[[int], float] | None = None,
                 cost_at: Callable[[int], Callable[[int], float]] | None = None,
                 confidence: ConfidenceMap | None = None,
                 sources_index: SuffixAutomaton | None = None) -> None:
        """``history_sources``: the history automaton (kept across requests) or sequences to build
        one from. ``sources_index``: a second history automaton (e.g. over the request's own
        sources, which the first does not hold); both are matched and both offer candidates."""
        if mode not in ("tree", "linear"):
            raise ValueError(f"mode must be 'tree' or 'linear', not {mode!r}")
        prompt = prompt_ids.tolist() if isinstance(prompt_ids, np.ndarray) else [int(t) for t in prompt_ids]
        self.linear = mode == "linear"
        self.use_context, self.use_history = use_context, use_history
        self.use_calibration = use_calibration and not self.linear
        self.use_reuse = use_reuse and not self.linear
        self.calibration_config = calibration or CalibrationConfig()
        self.linear_len, self.max_branches = linear_len, max_branches
        self.min_match_context, self.min_match_history = min_match_context, min_match_history
        self.cost_curve = cost_curve
        self.cost_at = cost_at    # the cost curve at a context length (read only when sizing a tree)
        self.confidence = confidence
        self.seq: list[int] = []
        self.prompt_len = len(prompt)

        self.local = SuffixAutomaton(counts="eager")
        if isinstance(history_sources, SuffixAutomaton):
            self.history = history_sources
        else:
            self.history = build_history(history_sources or []) if use_history else SuffixAutomaton("lazy")
        if use_history:
            self.history.finalize()             # a lazy automaton pays its count pass now, not in a step
        self.hmatch: Matcher = self.history.matcher()
        # every history automaton with text, each with its own matcher (self.history's first)
        self._hist: list[tuple[SuffixAutomaton, Matcher]] = []
        if use_history:
            if len(self.history):
                self._hist.append((self.history, self.hmatch))
            if sources_index is not None and len(sources_index):
                sources_index.finalize()
                self._hist.append((sources_index, sources_index.matcher()))
        self.calibrated: CalibratedTree | None = None
        self.reuse = ReuseBuffer()
        self.cutoff = AdaptiveCutoff(alpha0, tc)
        # per source: [accepted, sum of raw estimates, tested]; prior = 2 accepted of 2 expected
        self.stats: dict[str, list[float]] = {s: [0.0, 0.0, 0] for s in DRAFT_SOURCES}
        self._scale_at_propose: dict[str, float] = {}
        self._commit(prompt)

    # ---- state ------------------------------------------------------------------------------
    def scale(self, source: str) -> float:
        acc, est, _ = self.stats[source]
        return min(2.0, max(0.25, (acc + 2.0) / (est + 2.0)))

    def _commit(self, toks: Sequence[int]) -> None:
        for t in toks:
            t = int(t)
            self.seq.append(t)
            if self.use_context:
                self.local.extend(t)
            for _, m in self._hist:
                m.feed(t)

    def set_calibration(self, topk_ids: np.ndarray, topk_probs: np.ndarray) -> CalibrationStats | None:
        """Build the calibrated tree from the prefill top-k view ([T, k] for the T prompt tokens)."""
        if not self.use_calibration:
            return None
        self.calibrated = CalibratedTree.build(self.seq[:self.prompt_len], topk_ids, topk_probs,
                                               self.calibration_config)
        return self.calibrated.stats

    # ---- proposing ----------------------------------------------------------------------------
    def _sam_candidates(self, sam: SuffixAutomaton, state: int, L: int, source: str,
                        max_depth: int, max_nodes: int) -> list[Candidate]:
        out = []
        sc = self.scale(source)
        for c in sam.continuations(state, L, max_depth, self.max_branches, max_nodes):
            probs = [min(_MAX_P, r * match_confidence(L + i) * sc) for i, r in enumerate(c.probs)]
            out.append(Candidate(c.tokens, probs, source))
        return out

    def _matches(self) -> list[tuple[SuffixAutomaton, int, int, str]]:
        """The automata whose match is long enough to draft from: (automaton, state, length, source)."""
        out = []
        if self.use_context:
            s, L = self.local.self_match()
            if L >= self.min_match_context:
                out.append((self.local, s, L, "context"))
        for sam, m in self._hist:
            if m.length >= self.min_match_history:
                out.append((sam, m.state, m.length, "history"))
        return out

    def _offers(self) -> list[Candidate]:
        """The calibrated tree's and the reuse buffer's candidates (no automaton walk)."""
        out: list[Candidate] = []
        if self.calibrated is not None:
            sc = 0.9 * self.scale("calibrated")
            for toks, ps in self.calibrated.lookup(self.seq[-self.calibration_config.order:], self.max_branches * 2):
                out.append(Candidate(toks, [min(_MAX_P, p * sc) for p in ps], "calibrated"))
        if self.use_reuse:
            sc = self.scale("reuse")
            for c in self.reuse.offers(self.seq[-4:]):
                c.probs = [min(_MAX_P, p * sc) for p in c.probs]
                out.append(c)
        return out

    def candidates(self, budget: int, max_depth: int) -> list[Candidate]:
        return self._walk_matches(self._matches(), budget, max_depth) + self._offers()

    def _walk_matches(self, matches, budget: int, max_depth: int) -> list[Candidate]:
        out: list[Candidate] = []
        max_nodes = max(8, 2 * budget)
        for sam, state, L, source in matches:
            out += self._sam_candidates(sam, state, L, source, max_depth, max_nodes)
        return out

    def _first_step_caps(self, matches, offers: list[Candidate]) -> dict[str, float]:
        """Per source, the most any of its candidates' first steps can be: an automaton's from
        its match state's edges (``first_step_ratio``: the walk need not be made to know it;
        the first step's estimate is ``_sam_candidates``' product, which only grows with the
        ratio)."""
        caps: dict[str, float] = {}
        for sam, state, L, source in matches:
            r = sam.first_step_ratio(state)
            if r > 0.0:
                cap = min(_MAX_P, r * match_confidence(L) * self.scale(source))
                caps[source] = max(caps.get(source, 0.0), cap)
        for c in offers:
            if c.tokens:
                caps[c.source] = max(caps.get(c.source, 0.0), c.probs[0])
        return caps

    def propose(self, budget: int, max_depth: int = 16) -> DraftTree:
        """Draft tree for this step, rooted at the last committed token, at most ``budget`` drafts."""
        if not self.seq:
            raise ValueError("nothing committed yet: observe the first token before proposing")
        root = self.seq[-1]
        if budget <= 0 or max_depth <= 0:
            return root_only(root)
        if self.linear:
            self._scale_at_propose = {s: self.scale(s) for s in self.stats}
            b = TreeBuilder(root)
            cand = self._linear(min(budget, max_depth, self.linear_len))
            if cand is not None:
                b.add(cand)
            return b.flatten(list(range(1, len(b.token))))
        matches, offers = self._matches(), self._offers()
        if not matches and not offers:     # most steps of most answers: nothing to draft from
            return root_only(root)
        # a tree pays only if its best first step clears the cost curve's threshold: checked
        # from the sources' ceilings before walking the automata, then from the candidates
        # before building the trie (either way the trie would have chosen no draft)
        curve = self.cost_at(len(self.seq)) if self.cost_at is not None else self.cost_curve
        floor = pay_threshold(curve, budget) if curve is not None else None
        if floor is not None and not pays(first_step_ceiling(self._first_step_caps(matches, offers),
                                                              self.confidence), floor):
            return root_only(root)
        cands = self._walk_matches(matches, budget, max_depth) + offers
        if not cands or (floor is not None and not pays(best_first_step(cands, self.confidence), floor)):
            return root_only(root)
        self._scale_at_propose = {s: self.scale(s) for s in self.stats}
        b = TreeBuilder(root, self.confidence)
        for c in cands:
            b.add(c, max_depth)
        return b.build(budget, self.cutoff.alpha, max_depth, curve)

    def _linear(self, n: int) -> Candidate | None:
        """SAM-Decoding baseline: the longer of the local/history matches, its most frequent continuation."""
        best: tuple[int, SuffixAutomaton, int, str] | None = None
        if self.use_context:
            s, L = self.local.self_match()
            if L >= self.min_match_context:
                best = (L, self.local, s, "context")
        for sam, m in self._hist:
            if m.length >= self.min_match_history and (best is None or m.length > best[0]):
                best = (m.length, sam, m.state, "history")
        if best is None:
            return None
        L, sam, s, src = best
        c: Continuation | None = sam.best_continuation(s, L, n)
        if c is None:
            return None
        return Candidate(c.tokens, [min(_MAX_P, r * match_confidence(L + i)) for i, r in enumerate(c.probs)], src)

    # ---- learning from verification ------------------------------------------------------------
    def observe(self, accepted_tokens: Sequence[int], tree: DraftTree | None = None,
                next_ids: np.ndarray | Sequence[int] | None = None) -> list[int]:
        """Commit this step's emitted tokens (accepted drafts + bonus) and learn from the tree.

        ``next_ids[i]``: the model's argmax after tree node i (used for draft reuse).  Returns
        the accepted node path (root first) so the caller can label token sources.
        """
        toks = [int(t) for t in accepted_tokens]
        path = [0]
        if tree is not None and tree.n > 0:
            path = self._walk(tree, toks)
            self._update_stats(tree, path)
            last = path[-1]
            n_ok = len(path) - 1
            n_all = n_ok + self._height(tree, last)
            if not self.linear:
                self.cutoff.update(n_all, n_ok)
        self._commit(toks)
        if self.use_reuse:
            self.reuse.step(len(self.seq))
            if tree is not None and next_ids is not None and tree.children[path[-1]]:
                self._record_reuse(tree, path[-1], next_ids)
            self.reuse.consume(self.seq[-2:])
        return path

    @staticmethod
    def _walk(tree: DraftTree, toks: list[int]) -> list[int]:
        path, cur = [0], 0
        for t in toks:
            nxt = next((c for c in tree.children[cur] if tree.token_list[c] == t), None)
            if nxt is None:
                break
            path.append(nxt)
            cur = nxt
        return path

    @staticmethod
    def _height(tree: DraftTree, node: int) -> int:
        h, stack = 0, [(node, 0)]
        while stack:
            n, d = stack.pop()
            h = max(h, d)
            stack.extend((c, d + 1) for c in tree.children[n])
        return h

    def _update_stats(self, tree: DraftTree, path: list[int]) -> None:
        on_path = set(path)
        for node in path:                       # every child of an accepted node was tested
            for c in tree.children[node]:
                src = tree.sources[c]
                if src not in self.stats:
                    continue
                parent_cum = tree.cum[node]
                if tree.raw_step:               # the estimate before the confidence map
                    est = tree.raw_step[c]
                else:
                    est = tree.cum[c] / parent_cum if parent_cum > 0 else 0.0
                raw = est / self._scale_at_propose.get(src, 1.0)
                if self.confidence is not None and tree.raw_step:
                    self.confidence.update(src, tree.raw_step[c], c in on_path)
                st = self.stats[src]
                st[0] += 1.0 if c in on_path else 0.0
                st[1] += raw
                st[2] += 1

    def _record_reuse(self, tree: DraftTree, last: int, next_ids) -> None:
        y = next_ids.tolist() if isinstance(next_ids, np.ndarray) else list(next_ids)
        best: tuple[int, list[int], list[int]] | None = None
        stack = [(c, [tree.token_list[c]], [y[last]]) for c in tree.children[last]]
        while stack:                             # every rejected branch below the last accepted node
            n, xs, ys = stack.pop()
            kids = tree.children[n]
            if not kids:
                a, b = best_run(xs, ys, 1)
                if best is None or b - a > best[0]:
                    best = (b - a, xs, ys)
                continue
            for c in kids:
                stack.append((c, xs + [tree.token_list[c]], ys + [y[n]]))
        if best is not None and best[0] > 0:
            self.reuse.record(best[1], best[2], len(self.seq))
