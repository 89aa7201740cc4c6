"""Retrieval: the context for a request (past turns and document chunks, ranked and fitted to a
token budget) and drafting sources (token ids of past responses to similar requests).

The index gives ids and similarities; the texts and token ids are read from SQLite, so a vector
whose row is gone (an orphan awaiting cleanup) is simply not returned.
"""
from __future__ import annotations

import sqlite3
from typing import Callable, Iterable

from .indexing import IndexKeeper
from .models import ContextItem
from .store import Store, unpack_ids
from .vectors import VectorIndex, parse_id

MIN_CUT_ROOM = 32  # tokens: with less room left, a cut item says too little; try a shorter one


class Retriever:
    def __init__(self, store: Store, index: IndexKeeper, count_tokens: Callable[[str], int]):
        self.store, self.index, self.count_tokens = store, index, count_tokens

    def context_for(self, query: str, k: int, token_budget: int, session_id: int | None,
                    kinds: Iterable[str]) -> list[ContextItem]:
        if k <= 0 or token_budget <= 0:
            return []
        kinds = tuple(kinds)
        n = k * 3  # candidates: some are duplicates or do not fit the budget
        found = self.nearest(query, lambda vi, qv: (
            (self._chunk_hits(vi, qv, n) if "chunk" in kinds else [])
            + (self._turn_hits(vi, qv, n, session_id) if "message" in kinds else [])))
        found.sort(key=lambda it: it.score, reverse=True)
        return self._fit(found, k, token_budget)

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

    def _fit(self, ranked: list[ContextItem], k: int, token_budget: int) -> list[ContextItem]:
        """The first ``k`` distinct items within ``token_budget`` (the last one may be cut)."""
        out, used, seen = [], 0, set()
        for it in ranked:
            if len(out) >= k or used >= token_budget:
                break
            key = " ".join(it.text.split())
            if key in seen:
                continue
            seen.add(key)
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
            f"SELECT c.id, c.seq, c.text, d.name FROM chunks c JOIN documents d ON d.id = c.doc_id"
            f" WHERE c.id IN ({','.join('?' * len(by_id))})", list(by_id))
        return [ContextItem("chunk", r["text"], f"{r['name']} #{r['seq'] + 1}", by_id[r["id"]],
                            ref_id=r["id"]) for r in rows]

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
            f"SELECT id, session_id, role, text FROM messages WHERE id IN "
            f"({','.join('?' * len(by_id))})", list(by_id))
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
                                         score, ref_id=key)
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
