"""A constraint in the generation loop: masked picks, drafts cut to what the constraint allows,
forced tokens drafted for free.

Lossless by construction: every verified node's logits are masked under that node's own
constraint state (the emitted tokens + its path from the root), so the masked argmax (greedy) or
the masked distribution (sampling) is exactly what constrained plain decoding would use there,
and greedy_accept/sample_accept keep their guarantees. Cutting a draft node the constraint
forbids only drops a token verification would have rejected anyway.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .grammar import DONE, Constraint, State
from .drafting.tree import DraftTree, graft, subtree
from ..events import CONSTRAINT_SOURCE

MAX_FORCED = 16                # forced tokens drafted per step


class ConstrainedRun:
    """One request's constraint state, advanced by the emitted tokens."""

    def __init__(self, constraint: Constraint):
        self.constraint = constraint
        self.state: State = constraint.start

    def mask(self, logits: np.ndarray, states: list[State]) -> np.ndarray:
        return self.constraint.mask_logits(logits, states)

    def first(self, logits: np.ndarray) -> np.ndarray:
        """The prefill's last logits, masked for the first token."""
        return self.mask(logits[None], [self.state])[0]

    def commit(self, tokens: list[int]) -> None:
        for t in tokens:
            nxt = self.constraint.advance(self.state, t)
            if nxt is None:     # only a token the masks allowed is ever emitted
                raise RuntimeError(f"token {t} emitted against the constraint")
            self.state = nxt

    def prepare(self, tree: DraftTree, room: int
                ) -> tuple[DraftTree, Callable[[np.ndarray], np.ndarray]]:
        """Cut the nodes the constraint forbids (with their subtrees); then, if ``room`` (drafts
        the tree may hold) allows, extend the most likely leaf by the tokens the constraint forces.
        Returns the tree to verify and the function that masks its logits."""
        c = self.constraint
        states: list[State] = [self.state]
        keep = [0]
        where = {0: 0}                  # old index -> position in keep
        for i in range(1, tree.size):
            k = where.get(tree.parent_list[i])
            if k is None:
                continue
            s = c.advance(states[k], tree.token_list[i])
            if s is not None:
                where[i] = len(keep)
                keep.append(i)
                states.append(s)
        if len(keep) < tree.size:
            tree = subtree(tree, keep)
        room = min(room - tree.n, MAX_FORCED)
        if room > 0:
            tree, states = self._extend(tree, states, room)
        return tree, lambda logits: self.mask(logits, states)

    def _extend(self, tree: DraftTree, states: list[State], room: int
                ) -> tuple[DraftTree, list[State]]:
        c = self.constraint
        leaves = [i for i in range(tree.size) if not tree.children[i]]
        leaf = max(leaves, key=lambda i: (tree.cum[i], i))
        chain: list[int] = []
        s = states[leaf]
        added: list[State] = []
        while len(chain) < room:
            t = c.forced(s)
            if t is None:
                break
            s = c.advance(s, t)
            chain.append(t)
            added.append(s)
            if s == DONE:
                break
        if not chain:
            return tree, states
        return graft(tree, leaf, chain, CONSTRAINT_SOURCE), states + added
