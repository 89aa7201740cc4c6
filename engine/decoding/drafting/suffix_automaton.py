"""Incremental suffix automaton over token ids (SAM-Decoding's drafting index).

Two uses:
  * the *local* automaton over prompt + generated tokens: ``extend`` every committed token;
    ``self_match()`` is then the longest suffix of the text that also occurred earlier (it is
    simply ``link[last]``: the longest suffix whose endpos set holds more than the current end).
  * a *history* corpus of many sequences (``add_sequence``; sequences are separated by unique
    negative ids, so no match crosses a boundary and a separator is never proposed).  A query
    stream (the request's own text) is matched against it with a ``Matcher`` that is advanced one
    token at a time, amortized O(1), without rescanning.

Continuations are read by walking transitions from the match state: every string in a state
shares its endpos set, so the transition targets give exactly the distinct next tokens after
the matched suffix, and ``count(target)`` (|endpos|) says how often each occurred.

States are plain parallel lists (no per-state objects): ~100 bytes per state plus the dicts.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(slots=True)
class Continuation:
    """One candidate continuation after a matched suffix of length ``match_len``.

    ``counts[i]``: occurrences of ``matched_suffix + tokens[:i+1]``; ``probs[i]``: empirical
    probability of ``tokens[i]`` given everything before it (count / occurrences that continued).
    """
    tokens: list[int]
    counts: list[int]
    probs: list[float]
    match_len: int


class SuffixAutomaton:
    """Suffix automaton with optional eager endpos counts.

    counts="eager": every ``extend`` walks the suffix-link chain of the new state adding 1 to
    each |endpos|.  Exact counts at every moment (what the local automaton needs, since it is
    queried after every step); the walk is as long as the number of distinct repeated suffixes,
    short for natural text and at most O(n) for degenerate loops (measured: well under the
    per-step budget at n = 2k).
    counts="lazy": ``extend`` is O(1) amortized; counts are recomputed in O(n) by a counting
    sort on state lengths the first time they are needed after a change (history corpus:
    built once per request, queried many times).
    """

    def __init__(self, counts: str = "eager") -> None:
        if counts not in ("eager", "lazy"):
            raise ValueError(f"counts must be 'eager' or 'lazy', not {counts!r}")
        self.eager = counts == "eager"
        self.next: list[dict[int, int]] = [{}]
        self.link: list[int] = [-1]
        self.length: list[int] = [0]
        self.cnt: list[int] = [0]       # |endpos|, exact when not self._dirty
        self._own: list[int] = [0]      # 1 for states created as a new end (not clones): lazy base
        self.last = 0
        self.text: list[int] = []
        self._dirty = False
        self._sep = -1                  # next unique separator id (never a real token id)

    # ---- building -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.text)

    @property
    def num_states(self) -> int:
        return len(self.length)

    def extend(self, tok: int) -> None:
        """Append one token (standard online construction, Blumer et al.)."""
        nxt, link, length, cnt = self.next, self.link, self.length, self.cnt
        self.text.append(tok)
        cur = len(length)
        nxt.append({})
        length.append(length[self.last] + 1)
        link.append(0)
        cnt.append(0)
        self._own.append(1)
        p = self.last
        while p != -1 and tok not in nxt[p]:
            nxt[p][tok] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][tok]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(length)
                nxt.append(dict(nxt[q]))
                length.append(length[p] + 1)
                link.append(link[q])
                cnt.append(cnt[q])      # endpos(clone) = endpos(q) (+ the new end, added below)
                self._own.append(0)
                while p != -1 and nxt[p].get(tok) == q:
                    nxt[p][tok] = clone
                    p = link[p]
                link[q] = clone
                link[cur] = clone
        self.last = cur
        if self.eager:
            s = cur                     # the new end position joins endpos of every suffix state
            while s > 0:
                cnt[s] += 1
                s = link[s]
        else:
            self._dirty = True

    def extend_many(self, toks) -> None:
        for t in toks:
            self.extend(int(t))

    def add_sequence(self, toks) -> None:
        """Index one more corpus sequence, fenced by a unique separator on each side."""
        if self.text:
            self.extend(self._new_sep())
        self.extend_many(toks)
        self.extend(self._new_sep())

    def _new_sep(self) -> int:
        s = self._sep
        self._sep -= 1
        return s

    def _ensure_counts(self) -> None:
        if not self._dirty:
            return
        n = len(self.length)
        cnt = list(self._own)
        # children before parents in the suffix-link tree == decreasing length
        buckets = [0] * (max(self.length) + 2)
        for L in self.length:
            buckets[L] += 1
        for i in range(1, len(buckets)):
            buckets[i] += buckets[i - 1]
        order = [0] * n
        for s in range(n - 1, -1, -1):
            buckets[self.length[s]] -= 1
            order[buckets[self.length[s]]] = s
        link = self.link
        for s in reversed(order):
            if link[s] > 0:
                cnt[link[s]] += cnt[s]
        cnt[0] = len(self.text)
        self.cnt = cnt
        self._dirty = False

    def finalize(self) -> None:
        """Bring lazy counts up to date now (e.g. right after indexing history), not at first use."""
        self._ensure_counts()

    def count(self, state: int) -> int:
        self._ensure_counts()
        return self.cnt[state]

    # ---- matching -------------------------------------------------------------------------
    def self_match(self) -> tuple[int, int]:
        """(state, length) of the longest suffix of the text that also ends earlier."""
        if self.last == 0:
            return 0, 0
        s = self.link[self.last]
        return s, self.length[s]

    def matcher(self) -> "Matcher":
        return Matcher(self)

    # ---- proposing ------------------------------------------------------------------------
    def continuations(self, state: int, match_len: int, max_len: int, max_branches: int = 4,
                      max_nodes: int = 64, min_ratio: float = 0.0) -> list[Continuation]:
        """Best-first walk of the continuation trie after ``state``.

        A node's priority is the product of empirical step probabilities along its path, so a
        span that occurred once (ratio 1 at every step) is followed to full depth first, and
        alternatives are added while ``max_nodes`` allows.  Each node offers at most
        ``max_branches`` children with step probability >= ``min_ratio`` (the best child is
        always offered).  Returns up to ``max_branches`` maximal leaf paths, best first.
        Separators (negative ids) count in the denominators (that occurrence ended) but are
        never proposed.
        """
        if state <= 0 or max_len <= 0:
            return []
        self._ensure_counts()
        nxt, cnt = self.next, self.cnt
        # the walk's nodes as parallel lists, each pointing at its parent (a leaf's path is read
        # back once at the end: copying every node's path into its heap entry was a third of
        # the walk's time); heap entries: (-path_prob, node, depth, state), node ids in push order
        tok_of: list[int] = [0]
        cnt_of: list[int] = [0]
        pr_of: list[float] = [1.0]
        par_of: list[int] = [-1]
        heap = [(-1.0, 0, 0, state)]
        leaves: list[tuple[float, int, int]] = []
        while heap:
            negp, node, depth, s = heapq.heappop(heap)
            pushed = False
            used = len(tok_of) - 1
            if depth < max_len and used < max_nodes:
                denom = 0
                kids = []
                for tok, t in nxt[s].items():
                    c = cnt[t]
                    denom += c
                    if tok >= 0:
                        kids.append((c, tok, t))
                if kids and denom:
                    kids = heapq.nlargest(max_branches, kids) if len(kids) > max_branches else sorted(kids, reverse=True)
                    for c, tok, t in kids:
                        r = c / denom
                        if (r < min_ratio and pushed) or used >= max_nodes:
                            break
                        used += 1
                        pushed = True
                        heapq.heappush(heap, (negp * r, len(tok_of), depth + 1, t))
                        tok_of.append(tok)
                        cnt_of.append(c)
                        pr_of.append(r)
                        par_of.append(node)
            if not pushed and node:
                leaves.append((negp, len(leaves), node))
        leaves.sort()
        out = []
        for _, _, node in leaves[:max_branches]:
            toks, cnts, prs = [], [], []
            while node:
                toks.append(tok_of[node])
                cnts.append(cnt_of[node])
                prs.append(pr_of[node])
                node = par_of[node]
            toks.reverse()
            cnts.reverse()
            prs.reverse()
            out.append(Continuation(toks, cnts, prs, match_len))
        return out

    def first_step_ratio(self, state: int) -> float:
        """The largest step probability ``continuations`` can give a first token after ``state``
        (0.0 if it gives none): one pass over the state's edges, no walk."""
        if state <= 0:
            return 0.0
        self._ensure_counts()
        cnt = self.cnt
        denom = top = 0
        for tok, t in self.next[state].items():
            c = cnt[t]
            denom += c
            if tok >= 0 and c > top:
                top = c
        return top / denom if top and denom else 0.0

    def best_continuation(self, state: int, match_len: int, max_len: int) -> Continuation | None:
        """Single most frequent continuation (linear SAM baseline): follow the max-count edge."""
        if state <= 0:
            return None
        self._ensure_counts()
        nxt, cnt = self.next, self.cnt
        toks, cnts, prs = [], [], []
        s = state
        while len(toks) < max_len:
            best, best_c, best_t, denom = None, 0, -1, 0
            for tok, t in nxt[s].items():
                c = cnt[t]
                denom += c
                if tok >= 0 and c > best_c:
                    best, best_c, best_t = tok, c, t
            if best is None:
                break
            toks.append(best)
            cnts.append(best_c)
            prs.append(best_c / denom)
            s = best_t
        return Continuation(toks, cnts, prs, match_len) if toks else None


class Matcher:
    """Tracks the longest suffix of an external query stream that occurs in the automaton."""

    __slots__ = ("sam", "state", "length")

    def __init__(self, sam: SuffixAutomaton) -> None:
        self.sam = sam
        self.state = 0
        self.length = 0

    def feed(self, tok: int) -> None:
        nxt, link, length = self.sam.next, self.sam.link, self.sam.length
        s, L = self.state, self.length
        while s and tok not in nxt[s]:
            s = link[s]
            L = length[s]
        t = nxt[s].get(tok)
        if t is None:
            self.state, self.length = 0, 0
        else:
            self.state, self.length = t, L + 1

    def feed_many(self, toks) -> None:
        for t in toks:
            self.feed(int(t))

    def reset(self) -> None:
        self.state, self.length = 0, 0
