"""Constrained decoding: the answer must be exactly one alternative of a character-level grammar.

    grammar = Grammar([["tap(1)"], ["tap(2)"], ["type(3, \"", Free(60), "\")"], ["back()"],
                       ["done(\"", Free(100), "\")"]])
    constraint = engine.constraint(grammar)        # compiled against the engine's vocabulary
    engine.generate(prompt, constraint=constraint, method="hexa")

An alternative is a sequence of literal strings and ``Free`` segments (1..max_chars characters,
none of them in ``exclude``). After a complete alternative only end-of-turn tokens are allowed.
(When one alternative is a prefix of another, ``back`` and ``back()``, both may follow.)

Tokens are matched on their text, character by character: a token is allowed iff its text is a
valid continuation of some alternative, whatever segment boundaries it spans (``Ġtap``, ``")``).
A ``Free`` segment must be last or be followed by a literal starting with one of its excluded
characters: then free text ends exactly at the first excluded character, which keeps the
character automaton small and lets the token masks use precomputed tables.

Cost, measured on SmolLM2's 49k tokens (one core of this 2-core x86 machine, medians): the
vocabulary index, once per engine (``Engine.constraint``), 0.35-0.45 s; free-text tables, once per
engine and excluded-character set, 50-80 ms; compiling a 60-alternative grammar 0.2 ms; the mask
of its first token 0.3 ms (the grammar and the sorted vocabulary are walked together, never the
49k tokens); a free-text mask 0.45 ms; a cached mask 20 us. Masks are cached by state (free
text's length only matters near its limit), so a request pays each once. Constrained plain
decoding measured 20.1 ms/token vs 19.3 unconstrained.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..model.vocab import VocabIndex, prefix_range

BULK = 64                       # a free-text range this large is masked with array ops, not walked


@dataclass(frozen=True)
class Free:
    """Free text: 1..max_chars characters, none of which is in ``exclude``."""
    max_chars: int = 80
    exclude: str = '"\n'


Segment = str | Free


class Grammar:
    """Alternatives, each a sequence of segments (literal ``str`` or ``Free``)."""

    def __init__(self, alternatives: Iterable[Sequence[Segment] | str]):
        self.alternatives: list[tuple[Segment, ...]] = []
        for alt in alternatives:
            segs: list[Segment] = []
            for seg in ([alt] if isinstance(alt, (str, Free)) else alt):
                if isinstance(seg, Free):
                    if seg.max_chars < 1:
                        raise ValueError("a Free segment needs max_chars >= 1")
                    if segs and isinstance(segs[-1], Free):
                        raise ValueError("two Free segments in a row: separate them with a literal")
                    segs.append(seg)
                elif isinstance(seg, str):
                    if seg:
                        if segs and isinstance(segs[-1], str):
                            segs[-1] += seg
                        else:
                            segs.append(seg)
                else:
                    raise TypeError(f"a grammar segment is a str or a Free, not {type(seg).__name__}")
            for a, b in zip(segs, segs[1:]):
                if isinstance(a, Free) and b[0] not in a.exclude:
                    raise ValueError(f"the literal after a Free segment must start with one of its "
                                     f"excluded characters {a.exclude!r}, not {b[0]!r}")
            if not segs:
                raise ValueError("an empty alternative")
            self.alternatives.append(tuple(segs))
        if not self.alternatives:
            raise ValueError("a grammar needs at least one alternative")

    def matches(self, text: str) -> bool:
        """Whether ``text`` is exactly one of the alternatives."""
        g = CharGrammar(self)
        return g.final(g.walk(g.start, text))


@dataclass(frozen=True)
class _Edge:
    exclude: frozenset[str]
    max_chars: int
    target: int


Position = int | tuple[int, int]    # a trie node, or (free edge, characters written in it)
State = frozenset                    # of positions; DONE after an end-of-turn token


class CharGrammar:
    """The alternatives as a character trie whose Free segments are edges; states are sets of
    positions (alternatives sharing a prefix share nodes; literal text and free text may both
    continue from one node, hence sets)."""

    def __init__(self, grammar: Grammar):
        self.children: list[dict[str, int]] = [{}]
        self.frees: list[dict[tuple, int]] = [{}]
        self.is_final: list[bool] = [False]
        self.edges: list[_Edge] = []
        for alt in grammar.alternatives:
            node = 0
            for seg in alt:
                if isinstance(seg, str):
                    for ch in seg:
                        node = self.children[node].get(ch) or self._child(node, ch)
                else:
                    key = (seg.max_chars, frozenset(seg.exclude))
                    e = self.frees[node].get(key)
                    if e is None:
                        e = self.frees[node][key] = len(self.edges)
                        self.edges.append(_Edge(key[1], seg.max_chars, self._node()))
                    node = self.edges[e].target
            self.is_final[node] = True
        self.start: State = self.closure([0])

    def _node(self) -> int:
        self.children.append({})
        self.frees.append({})
        self.is_final.append(False)
        return len(self.children) - 1

    def _child(self, node: int, ch: str) -> int:
        new = self._node()
        self.children[node][ch] = new
        return new

    def closure(self, positions: Iterable[Position]) -> State:
        out: set = set()
        stack = list(positions)
        while stack:
            p = stack.pop()
            if p in out:
                continue
            out.add(p)
            if type(p) is int:
                stack.extend((e, 0) for e in self.frees[p].values())
            elif p[1] >= 1:                    # free text may end here
                stack.append(self.edges[p[0]].target)
        return frozenset(out)

    def step(self, state: Iterable[Position], ch: str) -> State:
        nxt: list[Position] = []
        for p in state:
            if type(p) is int:
                c = self.children[p].get(ch)
                if c is not None:
                    nxt.append(c)
            else:
                edge = self.edges[p[0]]
                if p[1] < edge.max_chars and ch not in edge.exclude:
                    nxt.append((p[0], p[1] + 1))
        return self.closure(nxt) if nxt else frozenset()

    def walk(self, state: State, text: str) -> State:
        for ch in text:
            state = self.step(state, ch)
            if not state:
                break
        return state

    def final(self, state: State) -> bool:
        return any(type(p) is int and p >= 0 and self.is_final[p] for p in state)


DONE: State = frozenset({-1})       # after an end-of-turn token: only end-of-turn tokens follow


class Constraint:
    """A grammar compiled against a vocabulary: token masks by state and state transitions.

    ``allowed(state)[t]`` is True iff ``advance(state, t)`` is not None (tests check this
    exhaustively). A state from which no token can continue (a literal character no whole token
    can write) allows the end-of-turn tokens, so generation ends rather than failing.
    """

    def __init__(self, grammar: Grammar, vocab: VocabIndex, eos_ids: Iterable[int]):
        self.grammar = grammar
        self.vocab = vocab
        self.chars = CharGrammar(grammar)
        self.start: State = self.chars.start
        self.eos = sorted(t for t in set(eos_ids) if 0 <= t < vocab.vocab_size)
        self._eos_set = set(self.eos)
        self._masks: dict[frozenset, np.ndarray] = {}
        self._forced: dict[frozenset, int | None] = {}
        self._next: dict[tuple[State, int], State | None] = {}
        for edge in self.chars.edges:     # built once per vocabulary, here rather than mid-request
            vocab.free_tables(edge.exclude)

    @property
    def vocab_size(self) -> int:
        return self.vocab.vocab_size

    # ---- transitions --------------------------------------------------------------------------
    def advance(self, state: State, token: int) -> State | None:
        """The state after ``token``, or None if ``token`` is not allowed in ``state``."""
        key = (state, token)
        if key in self._next:
            return self._next[key]
        if token in self._eos_set:
            nxt = DONE if bool(self.allowed(state)[token]) else None
        elif state == DONE or not 0 <= token < self.vocab.vocab_size or not self.vocab.texts[token]:
            nxt = None
        else:
            nxt = self.chars.walk(state, self.vocab.texts[token]) or None
        if len(self._next) > 200_000:
            self._next.clear()
        self._next[key] = nxt
        return nxt

    def walk(self, state: State, tokens: Iterable[int]) -> State | None:
        for t in tokens:
            state = self.advance(state, int(t))
            if state is None:
                return None
        return state

    def complete(self, state: State) -> bool:
        return state == DONE or self.chars.final(state)

    # ---- masks --------------------------------------------------------------------------------
    def _key(self, state: State) -> frozenset:
        """States with the same mask share a key: free text's length only matters for whether it
        may end (>= 1 character) and for the room left, beyond the longest token."""
        if all(type(p) is int for p in state):
            return state
        edges, cap = self.chars.edges, self.vocab.max_len
        return frozenset(p if type(p) is int else
                         (p[0], min(p[1], 1), min(edges[p[0]].max_chars - p[1], cap)) for p in state)

    def allowed(self, state: State) -> np.ndarray:
        """Bool mask over the vocabulary of the tokens allowed next (cached by state)."""
        key = self._key(state)
        mask = self._masks.get(key)
        if mask is None:
            if len(self._masks) > 4096:
                self._masks.clear()
                self._forced.clear()
            mask = self._masks[key] = self._compute(state)
        return mask

    def forced(self, state: State) -> int | None:
        """The only token allowed in ``state``, if there is exactly one."""
        key = self._key(state)
        if key not in self._forced:
            mask = self.allowed(state)
            ids = np.flatnonzero(mask) if int(np.count_nonzero(mask)) == 1 else None
            self._forced[key] = int(ids[0]) if ids is not None else None
        return self._forced[key]

    def mask_logits(self, logits: np.ndarray, states: Sequence[State]) -> np.ndarray:
        """``logits[i]`` with the tokens ``states[i]`` disallows set to -inf (a new array)."""
        allowed = np.stack([self.allowed(s) for s in states])
        return np.where(allowed, logits, np.array(-np.inf, dtype=logits.dtype))

    def _compute(self, state: State) -> np.ndarray:
        mask = np.zeros(self.vocab.vocab_size, dtype=np.bool_)
        if state != DONE:
            ids: list[int] = []
            parts: list[np.ndarray] = []
            self._walk(0, len(self.vocab.keys), 0, state, ids, parts)
            if ids:
                mask[ids] = True
            for p in parts:         # token ids, or a mask over them
                if p.dtype == np.bool_:
                    mask |= p
                else:
                    mask[p] = True
        if (state == DONE or self.chars.final(state) or not mask.any()) and self.eos:
            mask[self.eos] = True
        return mask

    def _walk(self, lo: int, hi: int, d: int, state: State, ids: list[int], parts: list[np.ndarray]) -> None:
        """Tokens at sorted positions [lo, hi) share their first ``d`` characters, which lead the
        grammar to ``state``: emit those the grammar accepts whole. Literal characters descend
        one character at a time; free text is handled per range (``_free``)."""
        keys, g = self.vocab.keys, self.chars
        i = lo
        if d:
            while i < hi and len(keys[i]) == d:      # the prefix itself is a token
                ids.append(self.vocab.ids[i])
                i += 1
        if i >= hi:
            return
        nodes = [p for p in state if type(p) is int]
        prefix = keys[i][:d]
        for ch in {c for n in nodes for c in g.children[n]}:
            a, b = self.vocab.range(prefix + ch, i, hi)
            if a < b:
                self._walk(a, b, d + 1, g.step(nodes, ch), ids, parts)
        for p in state:
            if type(p) is not int:
                self._free(i, hi, d, p, ids, parts)

    def _free(self, lo: int, hi: int, d: int, pos: tuple[int, int], ids: list[int],
              parts: list[np.ndarray]) -> None:
        """Tokens in [lo, hi) (longer than ``d``) whose rest is free text from ``pos``: free
        characters to the token's end, or up to an excluded character and on through the
        grammar after the segment (a rest starting with that character was walked as literal)."""
        v, g = self.vocab, self.chars
        edge = g.edges[pos[0]]
        room = edge.max_chars - pos[1]
        if hi - lo < BULK:
            start = g.closure([pos])
            ids.extend(v.ids[j] for j in range(lo, hi) if g.walk(start, v.keys[j][d:]))
            return
        tables = v.free_tables(edge.exclude)
        if d == 0:        # the whole vocabulary: masks by token id; exits from the tail table
            stay = tables.clean_by_id
            parts.append(stay if room >= v.max_len else stay & (v.lens_by_id <= room))
            self._exits(tables, edge, pos[1], parts)
            return
        lens = v.lens[lo:hi]
        stay = (tables.clean_from[lo:hi] <= d) & (lens - d <= room) & (lens > d)
        parts.append(v.order[lo:hi][stay])
        start = g.closure([pos])
        for j in np.flatnonzero(tables.clean_from[lo:hi] > d).tolist():
            if g.walk(start, v.keys[lo + j][d:]):
                ids.append(v.ids[lo + j])

    def _exits(self, tables, edge: _Edge, written: int, parts: list[np.ndarray]) -> None:
        """Tokens made of p >= 1 free characters then a tail the grammar accepts after the segment."""
        g, keys = self.chars, tables.tail_keys
        room = edge.max_chars - written

        def emit(j: int) -> None:
            free = tables.tail_free[j]
            parts.append(tables.tail_ids[j][free <= room])

        def walk(lo: int, hi: int, d: int, state: State) -> None:
            i = lo
            while i < hi and len(keys[i]) == d:
                emit(i)
                i += 1
            if i >= hi:
                return
            nodes = [p for p in state if type(p) is int]
            prefix = keys[i][:d]
            for ch in {c for n in nodes for c in g.children[n]}:
                a, b = prefix_range(keys, prefix + ch, i, hi)
                if a < b:
                    walk(a, b, d + 1, g.step(nodes, ch))
            for p in state:
                if type(p) is not int:
                    start = g.closure([p])
                    for j in range(i, hi):
                        if g.walk(start, keys[j][d:]):
                            emit(j)

        walk(0, len(keys), 0, g.closure([edge.target]))

