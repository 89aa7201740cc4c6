"""Retrieval: the context for a request (past turns and document chunks, ranked and fitted to a
token budget) and drafting sources (token ids of past responses to similar requests).

The index gives ids and similarities; the texts and token ids are read from SQLite, so a vector
whose row is gone (an orphan awaiting cleanup) is simply not returned.

Context must earn its place in the prompt: the 135M model copies whatever it is given (two chats
about a dragon made "What is the capital of France?" answer with the dragon, 11.6 tokens accepted
per step: it was reciting). So an item is sent only when its cosine similarity to the request
reaches ``RELEVANCE_MIN`` (``RELEVANCE_MIN_CHUNK`` for a passage; calibrated on the labelled set in ``tests/memory/data/relevance.json``,
see ``memory.relevance``), near-duplicates are sent once, and the budget grows with the question
(``budget_for``). Among relevant items, recent ones and those of the same session rank first.
"""
from __future__ import annotations

import math
import re
import sqlite3
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from .indexing import IndexKeeper
from .embeddings import MODEL_NAME
from .models import ContextItem
from .store import Store, unpack_ids
from .vectors import VectorIndex, parse_id

MIN_CUT_ROOM = 32  # tokens: with less room left, a cut item says too little; try a shorter one

# all-MiniLM-L6-v2 cosine similarity an item needs to be sent, by kind: a past turn is short and
# about one thing, a document passage (~200 tokens) mixes several, so a passage that holds the
# answer scores lower (0.29-0.44 on the labelled set, against 0.52-0.93 for turns). Calibrated on
# the labelled set's even requests (54 x 24 = 1,296 pairs; best F1 for turns on 0.52-0.58, for
# passages at 0.42 only); on the odd ones: precision 0.93, recall 0.82, where the 4 nearest sent
# before had precision 0.16 (``python -m memory.relevance``, 2026-11-24; table in docs/memory.md).
RELEVANCE_MIN = 0.54              # a past turn
RELEVANCE_MIN_CHUNK = 0.42        # a document passage
# A cosine threshold means something for one embedder only: another one (HEXA_EMBED_MODEL, the
# tests' hash embedder) is uncalibrated and gets the k nearest, as before the threshold existed.
CALIBRATED_MIN = {MODEL_NAME: {"message": RELEVANCE_MIN, "chunk": RELEVANCE_MIN_CHUNK}}
NO_THRESHOLD = -2.0             # below any cosine similarity
BUDGET_PER_QUESTION_TOKEN = 8     # context tokens per token of the question...
BUDGET_MIN = 64                   # ...but a short question may still get a note or two
RECENCY_BONUS = 0.04              # rank bonus of an item from just now, halved every...
RECENCY_HALF_LIFE_DAYS = 7.0
SAME_SESSION_BONUS = 0.05         # rank bonus of a document given in this session
NEAR_DUPLICATE = 0.6              # word-trigram Jaccard above which an item repeats an earlier one


@dataclass(frozen=True)
class Policy:
    """What is sent: the threshold (on the raw similarity: recency and session only order what
    is relevant, they never make an item relevant; None: the one calibrated for the embedder;
    ``min_chunk_score``: another one for document passages) and the rank bonuses."""
    min_score: float | None = None
    min_chunk_score: float | None = None
    recency_bonus: float = RECENCY_BONUS
    same_session_bonus: float = SAME_SESSION_BONUS
    near_duplicate: float = NEAR_DUPLICATE

    @classmethod
    def legacy(cls) -> "Policy":
        """Before calibration: the k nearest whatever their similarity, exact duplicates once."""
        return cls(min_score=NO_THRESHOLD, recency_bonus=0.0, same_session_bonus=0.0, near_duplicate=1.01)


def budget_for(question_tokens: int, cap: int) -> int:
    """Tokens of context a question of ``question_tokens`` tokens may bring, at most ``cap``:
    a 7-word question got 512 tokens of notes, 60 times its length, and answered the notes."""
    return max(0, min(cap, max(BUDGET_MIN, BUDGET_PER_QUESTION_TOKEN * question_tokens)))


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i:i + 3]) for i in range(max(1, len(words) - 2))}


def near_duplicate(a: set, b: set, limit: float) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= limit


class Retriever:
    def __init__(self, store: Store, index: IndexKeeper, count_tokens: Callable[[str], int]):
        self.store, self.index, self.count_tokens = store, index, count_tokens

    def context_for(self, query: str, k: int, token_budget: int, session_id: int | None,
                    kinds: Iterable[str], policy: Policy = Policy(),
                    now: float | None = None) -> list[ContextItem]:
        if k <= 0 or token_budget <= 0:
            return []
        kinds = tuple(kinds)
        n = k * 3  # candidates: some are duplicates or do not fit the budget
        found = self.nearest(query, lambda vi, qv: (
            (self._chunk_hits(vi, qv, n) if "chunk" in kinds else [])
            + (self._turn_hits(vi, qv, n, session_id) if "message" in kinds else [])))
        found = [it for it in found if it.score >= self.min_score(policy, it.kind)]
        now = time.time() if now is None else now

        def rank(it: ContextItem) -> float:
            age_days = max(0.0, now - it.created) / 86400 if it.created else math.inf
            return (it.score + policy.recency_bonus * 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
                    + (policy.same_session_bonus if session_id is not None
                       and it.session_id == session_id else 0.0))

        found.sort(key=rank, reverse=True)
        return self._fit(found, k, token_budget, policy.near_duplicate)

    def min_score(self, policy: Policy, kind: str) -> float:
        if kind == "chunk" and policy.min_chunk_score is not None:
            return policy.min_chunk_score
        if policy.min_score is not None:
            return policy.min_score
        return CALIBRATED_MIN.get(getattr(self.index.embedder, "name", ""), {}).get(kind, NO_THRESHOLD)

    def nearest(self, query: str, search: Callable[[VectorIndex, list[float]], list]) -> list:
        """``search(index, query vector)``, or [] when there is no query or no usable index."""
        if not query.strip():
            return []
        vi = self.index.ready()
        if vi is None:
            return []
        qv = self.index.embedder([query])[0]
        try:
            return search(vi, qv)
        except Exception as e:  # a damaged index mid-session: repaired on next use
            self.index.failed(e)
            return []

    def _fit(self, ranked: list[ContextItem], k: int, token_budget: int,
             dup_limit: float = NEAR_DUPLICATE) -> list[ContextItem]:
        """The first ``k`` distinct items within ``token_budget`` (the last one may be cut); an
        item whose words mostly repeat one already taken (overlapping chunks, a question asked
        twice) is skipped."""
        out, used, seen, taken = [], 0, set(), []
        for it in ranked:
            if len(out) >= k or used >= token_budget:
                break
            key = " ".join(it.text.split())
            shingles = _shingles(key)
            if key in seen or any(near_duplicate(shingles, t, dup_limit) for t in taken):
                continue
            seen.add(key)
            taken.append(shingles)
            n = self.count_tokens(it.text)
            room = token_budget - used
            if n > room:
                if out and room < MIN_CUT_ROOM:
                    continue
                it.text = self._cut(it.text, room)
                if not it.text:
                    continue
                n = self.count_tokens(it.text)
            it.tokens = n
            used += n
            out.append(it)
        return out

    def _chunk_hits(self, vi: VectorIndex, qv, n: int) -> list[ContextItem]:
        by_id = {parse_id(vid): score for vid, score, _ in vi.query("chunks", qv, n)}
        if not by_id:
            return []
        rows = self.store.query(
            f"SELECT c.id, c.seq, c.text, d.name, d.session_id, d.created FROM chunks c"
            f" JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({','.join('?' * len(by_id))})",
            list(by_id))
        return [ContextItem("chunk", r["text"], f"{r['name']} #{r['seq'] + 1}", by_id[r["id"]],
                            ref_id=r["id"], title=r["name"], session_id=r["session_id"],
                            created=r["created"]) for r in rows]

    def _turn_hits(self, vi: VectorIndex, qv, n: int, session_id: int | None) -> list[ContextItem]:
        """Matching messages as whole turns (user + reply), each turn once at its best score."""
        # agent tasks and actions are no conversation context (they have their own examples)
        where: dict = {"mode": {"$ne": "agent"}}
        if session_id is not None:
            where = {"$and": [where, {"session_id": {"$ne": int(session_id)}}]}
        by_id = {parse_id(vid): score for vid, score, _ in vi.query("messages", qv, n, where=where)}
        if not by_id:
            return []
        rows = self.store.query(
            f"SELECT m.id, m.session_id, m.role, m.text, m.created, s.title FROM messages m"
            f" JOIN sessions s ON s.id = m.session_id WHERE m.id IN ({','.join('?' * len(by_id))})",
            list(by_id))
        turns: dict[int, ContextItem] = {}
        for r in rows:
            user, reply = self._turn_of(r)
            key = user["id"] if user else reply["id"]
            parts = [f"User: {user['text']}"] if user else []
            if reply:
                parts.append(f"Assistant: {reply['text']}")
            score = by_id[r["id"]]
            if key not in turns or turns[key].score < score:
                turns[key] = ContextItem("message", "\n".join(parts), f"session {r['session_id']}",
                                         score, ref_id=key, title=r["title"],
                                         session_id=r["session_id"], created=r["created"])
        return list(turns.values())

    def _turn_of(self, r: sqlite3.Row) -> tuple[sqlite3.Row | None, sqlite3.Row | None]:
        """(user message, assistant reply) of the turn that message row ``r`` belongs to."""
        if r["role"] == "user":
            nxt = self.store.one("SELECT id, role, text FROM messages WHERE session_id = ? AND "
                                 "id > ? ORDER BY id LIMIT 1", (r["session_id"], r["id"]))
            return r, (nxt if nxt is not None and nxt["role"] == "assistant" else None)
        prev = self.store.one("SELECT id, role, text FROM messages WHERE session_id = ? AND "
                              "id < ? ORDER BY id DESC LIMIT 1", (r["session_id"], r["id"]))
        return (prev if prev is not None and prev["role"] == "user" else None), r

    def _cut(self, text: str, budget: int) -> str:
        """Longest word-boundary prefix of ``text`` within ``budget`` tokens."""
        if budget <= 0:
            return ""
        words = text.split(" ")

        def cut(n: int) -> str:
            return text if n >= len(words) else " ".join(words[:n]) + " …"

        lo, hi = 0, len(words)
        while lo < hi:  # binary search on the number of words kept
            mid = (lo + hi + 1) // 2
            if self.count_tokens(cut(mid)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return cut(lo) if lo else ""

    def drafting_sources(self, query: str, max_count: int, max_tokens: int,
                         mode: str | None) -> list[list[int]]:
        if max_count <= 0 or max_tokens <= 0:
            return []
        where = {"mode": mode} if mode else None
        hits = self.nearest(query, lambda vi, qv: vi.query("responses", qv, max_count * 2,
                                                             where=where))
        ids = [parse_id(vid) for vid, _, _ in hits]
        if not ids:
            return []
        token_ids = {r["id"]: r["token_ids"] for r in self.store.query(
            f"SELECT id, token_ids FROM messages WHERE id IN ({','.join('?' * len(ids))})", ids)}
        out: list[list[int]] = []
        left, seen = max_tokens, set()
        for mid in ids:  # best first; the same reply given twice is one source
            toks = unpack_ids(token_ids.get(mid))
            if not toks or tuple(toks) in seen:
                continue
            seen.add(tuple(toks))
            toks = toks[:left]
            out.append(toks)
            left -= len(toks)
            if len(out) >= max_count or left <= 0:
                break
        return out
