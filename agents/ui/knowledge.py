"""Every app's UI graph, loaded from memory on first use and written through on every change
(an exploration or an episode killed at any point keeps what it learned)."""
from __future__ import annotations

from typing import Protocol

from .graph import AppGraph, UIEdge, UIScreen


class GraphRows(Protocol):
    """What the memory keeps for us (``memory.ui_graph.UIGraphStore``)."""

    def load(self, package: str) -> dict: ...

    def put_screen(self, package: str, data: dict, id: int | None = None) -> int: ...

    def put_edge(self, package: str, src: int, data: dict, id: int | None = None) -> int: ...

    def put_app(self, package: str, home: int | None, info: dict) -> None: ...


class Knowledge:
    def __init__(self, rows: GraphRows | None):
        self.rows = rows                 # None: graphs live in this process only (nothing stored)
        self._graphs: dict[str, AppGraph] = {}
        self.info: dict[str, dict] = {}  # per package: exploration bookkeeping
        self._next_id = -1               # ids for graphs kept in this process only

    def graph(self, package: str) -> AppGraph:
        g = self._graphs.get(package)
        if g is None:
            g = AppGraph(package)
            if self.rows is not None:
                data = self.rows.load(package)
                g.screens = {int(k): UIScreen.from_json(v) for k, v in data["screens"].items()}
                g.edges = {int(k): UIEdge.from_json(v) for k, v in data["edges"].items()}
                g.home = data["home"]
                self.info[package] = data["info"]
            self._graphs[package] = g
        return g

    def known(self, package: str) -> bool:
        g = self.graph(package)
        return bool(g.screens)

    def observe(self, g: AppGraph, s: UIScreen, screen, rows: bool = True,
                data: frozenset[str] = frozenset()) -> list[str]:
        """Another visit of a known screen: its catalogue takes what the visit shows, and is
        saved when it grew (new keys, or new labels under a key: "Pin" and "Unpin"). The keys
        seen for the first time."""
        size = s.size()
        fresh = s.observe(screen, rows=rows, data=data)
        if s.size() != size:
            self.save_screen(g, s)
        return fresh

    def save_screen(self, g: AppGraph, s: UIScreen) -> UIScreen:
        if self.rows is None:
            if s.id == 0:
                s.id = self._fresh_id()
        else:
            s.id = self.rows.put_screen(g.package, s.to_json(), s.id or None)
        g.screens[s.id] = s
        return s

    def save_edge(self, g: AppGraph, e: UIEdge) -> UIEdge:
        if self.rows is None:
            if e.id == 0:
                e.id = self._fresh_id()
        else:
            e.id = self.rows.put_edge(g.package, e.src, e.to_json(), e.id or None)
        g.edges[e.id] = e
        return e

    def save_app(self, g: AppGraph, **info) -> None:
        self.info.setdefault(g.package, {}).update(info)
        if self.rows is not None:
            self.rows.put_app(g.package, g.home, self.info[g.package])

    def _fresh_id(self) -> int:
        self._next_id -= 1
        return -self._next_id
