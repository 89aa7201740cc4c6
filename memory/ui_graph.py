"""The UI agent's app knowledge on disk: each app's screens and edges as JSON rows (the agent owns
their meaning, see ``agents/ui/graph.py``), and an embedding cache for short texts.

Every write is one transaction: an exploration killed at any point keeps every screen and edge
it had written, and resumes from there.
"""
from __future__ import annotations

import array
import json
import sys
from typing import Callable, Sequence

from .store import Store, now

Embed = Callable[[list[str]], list[list[float]]]


class UIGraphStore:
    def __init__(self, store: Store):
        self.store = store

    def load(self, package: str) -> dict:
        """{"screens": {id: data}, "edges": {id: data}, "home": id | None, "info": {...}}"""
        screens = {r["id"]: json.loads(r["data"]) for r in self.store.query(
            "SELECT id, data FROM ui_screens WHERE package = ?", (package,))}
        edges = {r["id"]: json.loads(r["data"]) for r in self.store.query(
            "SELECT id, data FROM ui_edges WHERE package = ?", (package,))}
        app = self.store.one("SELECT home, data FROM ui_apps WHERE package = ?", (package,))
        return {"screens": screens, "edges": edges, "home": app["home"] if app else None,
                "info": json.loads(app["data"]) if app else {}}

    def put_screen(self, package: str, data: dict, id: int | None = None) -> int:
        """Insert (``id`` None) or replace a screen; its id."""
        with self.store.write() as c:
            if id is None:
                cur = c.execute("INSERT INTO ui_screens(package, data, updated) VALUES (?,?,?)",
                                (package, "{}", now()))
                id = int(cur.lastrowid)
            c.execute("UPDATE ui_screens SET data = ?, updated = ? WHERE id = ?",
                      (json.dumps(dict(data, id=id), ensure_ascii=False), now(), id))
        return id

    def put_edge(self, package: str, src: int, data: dict, id: int | None = None) -> int:
        with self.store.write() as c:
            if id is None:
                cur = c.execute("INSERT INTO ui_edges(package, src, data, updated) VALUES (?,?,?,?)",
                                (package, src, "{}", now()))
                id = int(cur.lastrowid)
            c.execute("UPDATE ui_edges SET data = ?, updated = ? WHERE id = ?",
                      (json.dumps(dict(data, id=id), ensure_ascii=False), now(), id))
        return id

    def put_app(self, package: str, home: int | None, info: dict) -> None:
        with self.store.write() as c:
            c.execute("INSERT INTO ui_apps(package, home, data, updated) VALUES (?,?,?,?) "
                      "ON CONFLICT(package) DO UPDATE SET home = excluded.home, data = excluded.data,"
                      " updated = excluded.updated", (package, home, json.dumps(info), now()))

    def apps(self) -> list[dict]:
        """Every app known: package, screens, edges, exploration info."""
        rows = self.store.query(
            "SELECT a.package, a.data, (SELECT COUNT(*) FROM ui_screens s WHERE s.package = a.package)"
            " AS screens, (SELECT COUNT(*) FROM ui_edges e WHERE e.package = a.package) AS edges"
            " FROM ui_apps a ORDER BY a.package")
        return [{"package": r["package"], "screens": r["screens"], "edges": r["edges"],
                 "info": json.loads(r["data"])} for r in rows]

    def forget(self, package: str) -> None:
        with self.store.write() as c:
            c.execute("DELETE FROM ui_edges WHERE package = ?", (package,))
            c.execute("DELETE FROM ui_screens WHERE package = ?", (package,))
            c.execute("DELETE FROM ui_apps WHERE package = ?", (package,))


class TextVectors:
    """Embeddings of short texts, computed once and kept in SQLite (``embed`` runs only for texts
    it has never seen under this model)."""

    def __init__(self, store: Store, embed: Embed, model: str):
        self.store, self.embed, self.model = store, embed, model
        self._memo: dict[str, list[float]] = {}

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            for i in range(0, len(todo), 500):
                part = todo[i:i + 500]
                rows = self.store.query(
                    f"SELECT text, vector FROM text_vectors WHERE model = ? AND text IN "
                    f"({','.join('?' * len(part))})", [self.model, *part])
                for r in rows:
                    self._memo[r["text"]] = _unpack(r["vector"])
            missing = [t for t in todo if t not in self._memo]
            if missing:
                vectors = self.embed(missing)
                with self.store.write() as c:
                    c.executemany("INSERT OR REPLACE INTO text_vectors(text, model, vector) VALUES (?,?,?)",
                                  [(t, self.model, _pack(v)) for t, v in zip(missing, vectors)])
                self._memo.update(zip(missing, (list(v) for v in vectors)))
        return [self._memo[t] for t in texts]


def _pack(vector: Sequence[float]) -> bytes:
    arr = array.array("f", vector)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


def _unpack(blob: bytes) -> list[float]:
    arr = array.array("f")
    arr.frombytes(blob)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tolist()
