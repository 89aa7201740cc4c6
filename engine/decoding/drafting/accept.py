"""Verification: which draft nodes the target model accepts.

greedy_accept  — lossless for greedy decoding: a child is accepted iff its token is the
                 model's argmax after its parent.
sample_accept  — lossless for sampling with deterministic (retrieved) drafts, the multi-draft
                 rule of SpecInfer for point-mass proposals: at a node with model distribution p,
                 try each child token x in turn and accept it with probability p(x) (p renormalised
                 after each rejection, with the rejected x zeroed); if every child is rejected,
                 sample from the residual.  P(emit x) = p(x) exactly, at every depth.
Both return (accepted node indices, root first; bonus token from the last accepted node).
"""
from __future__ import annotations

import numpy as np

from ...events import BONUS_SOURCE
from ..sampling import RowProbs, draw
from .tree import DraftTree


def greedy_accept(tree: DraftTree, next_ids: np.ndarray | list[int]) -> tuple[list[int], int]:
    """``next_ids[i]`` is the model's argmax for the token following node i."""
    nxt = next_ids.tolist() if isinstance(next_ids, np.ndarray) else list(next_ids)
    toks, children = tree.token_list, tree.children
    path = [0]
    cur = 0
    while True:
        want = nxt[cur]
        for c in children[cur]:
            if toks[c] == want:       # siblings hold distinct tokens: at most one match
                cur = c
                path.append(c)
                break
        else:
            return path, int(want)


def sample_accept(tree: DraftTree, probs: np.ndarray | RowProbs,
                  generator: np.random.Generator | None = None) -> tuple[list[int], int]:
    """``probs[i]`` is the model's (temperature/top-p processed) next-token distribution at node i
    (an array, or rows computed as they are read: ``sampling.RowProbs``).

    Children are tried in decreasing estimated acceptance (any fixed order is exact; this one
    maximizes the chance of going deeper). One uniform draw of ``generator`` per child tried and
    one for the bonus token (``sampling.draw``); None: a freshly seeded generator.
    """
    rng = generator if generator is not None else np.random.default_rng()
    toks, children, cum = tree.token_list, tree.children, tree.cum
    path = [0]
    cur = 0
    while True:
        kids = sorted(children[cur], key=lambda c: -cum[c])
        p = probs[cur]
        residual = None                # copy only when a child is rejected
        mass = float(p.sum())
        accepted = -1
        for c in kids:
            x = toks[c]
            px = float((residual if residual is not None else p)[x])
            u = rng.random()
            if mass > 0 and u * mass < px:
                accepted = c
                break
            if residual is None:
                residual = p.copy()
            residual[x] = 0.0
            mass -= px
        if accepted >= 0:
            cur = accepted
            path.append(cur)
            continue
        dist = residual if residual is not None else p
        if mass <= 1e-12 or (residual is not None and not residual.any()):
            dist = p                   # numerically all mass on rejected children: fall back to p
        bonus = draw(dist, rng)
        return path, bonus


def accepted_sources(tree: DraftTree, path: list[int]) -> tuple[str, ...]:
    """Source of every emitted token of a step: the accepted drafts, then the model's bonus."""
    return tuple(tree.sources[i] for i in path[1:]) + (BONUS_SOURCE,)
