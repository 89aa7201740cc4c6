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

import torch

from ...events import BONUS_SOURCE
from .tree import DraftTree


def greedy_accept(tree: DraftTree, next_ids: torch.Tensor | list[int]) -> tuple[list[int], int]:
    """``next_ids[i]`` is the model's argmax for the token following node i."""
    nxt = next_ids.tolist() if isinstance(next_ids, torch.Tensor) else list(next_ids)
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


def sample_accept(tree: DraftTree, probs: torch.Tensor,
                  generator: torch.Generator | None = None) -> tuple[list[int], int]:
    """``probs[i]`` is the model's (temperature/top-p processed) next-token distribution at node i.

    Children are tried in decreasing estimated acceptance (any fixed order is exact; this one
    maximizes the chance of going deeper).
    """
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
            u = float(torch.rand((), generator=generator))
            if mass > 0 and u * mass < px:
                accepted = c
                break
            if residual is None:
                residual = p.clone()
            residual[x] = 0.0
            mass -= px
        if accepted >= 0:
            cur = accepted
            path.append(cur)
            continue
        dist = residual if residual is not None else p
        if mass <= 1e-12:              # numerically all mass on rejected children: fall back to p
            dist = p
        bonus = int(torch.multinomial(dist, 1, generator=generator))
        return path, bonus


def accepted_sources(tree: DraftTree, path: list[int]) -> tuple[str, ...]:
    """Source of every emitted token of a step: the accepted drafts, then the model's bonus."""
    return tuple(tree.sources[i] for i in path[1:]) + (BONUS_SOURCE,)
