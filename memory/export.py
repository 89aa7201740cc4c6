"""What the memory shows of itself: a session exported as Markdown or JSON, and store statistics."""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from .errors import StoreError
from .models import ResponseStats
from .repository import Repository
from .store import Store

FORMATS = ("md", "json")


def export_session(repo: Repository, session_id: int, fmt: str = "md") -> str:
    if fmt not in FORMATS:
        raise StoreError(f"unknown export format {fmt!r} (use md or json)")
    s = repo.session(session_id)
    messages = [(m, repo.summary_sources(m.id)) for m in repo.messages(session_id)]
    if fmt == "json":
        return json.dumps({
            "session": asdict(s),
            "messages": [{**asdict(m), "sources": [{"id": d.id, "name": d.name} for d in srcs]}
                         for m, srcs in messages],
        }, ensure_ascii=False, indent=2)
    lines = [f"# {s.title}", "",
             f"- session: {s.id}", f"- mode: {s.mode or '-'}", f"- model: {s.model or '-'}",
             f"- created: {_iso(s.created)}", f"- updated: {_iso(s.updated)}", ""]
    if s.system_prompt:
        lines += ["## System", "", s.system_prompt, ""]
    for m, srcs in messages:
        lines += [f"## {m.role.capitalize()} · {_iso(m.created)}", "", m.text, ""]
        figures = _stats_line(m.stats)
        if figures:
            lines += [f"*{figures}*", ""]
        if srcs:
            lines += ["Sources: " + ", ".join(d.name for d in srcs), ""]
    return "\n".join(lines).rstrip() + "\n"


def stats(store: Store, root: Path, vector_path: Path) -> dict:
    q = store.scalar
    out = {
        "path": str(root),
        "schema_version": store.version(),
        "sessions": q("SELECT COUNT(*) FROM sessions"),
        "messages": q("SELECT COUNT(*) FROM messages"),
        "responses": q("SELECT COUNT(*) FROM messages WHERE role='assistant' AND "
                       "token_ids IS NOT NULL"),
        "documents": q("SELECT COUNT(*) FROM documents"),
        "chunks": q("SELECT COUNT(*) FROM chunks"),
        "pending_vectors": q("SELECT (SELECT COUNT(*) FROM messages WHERE embedded = 0) + "
                             "(SELECT COUNT(*) FROM chunks WHERE embedded = 0)"),
        "db_bytes": sum(p.stat().st_size for p in root.glob("hexa.db*") if p.is_file()),
        "vector_bytes": _du(vector_path),
    }
    avg = store.one("SELECT AVG(ttft_ms), AVG(ms_per_token), AVG(mean_accepted) "
                    "FROM messages WHERE role = 'assistant'")
    out["avg_ttft_ms"], out["avg_ms_per_token"], out["avg_mean_accepted"] = (
        None if v is None else round(float(v), 3) for v in avg)
    out["sessions_by_mode"] = {r[0] or "-": r[1] for r in store.query(
        "SELECT mode, COUNT(*) FROM sessions GROUP BY mode ORDER BY mode")}
    return out


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _stats_line(st: ResponseStats | None) -> str:
    parts: list[str] = []
    if st is None:
        return ""
    if st.ttft_ms is not None:
        parts.append(f"TTFT {st.ttft_ms:.0f} ms")
    if st.ms_per_token:
        parts.append(f"{st.ms_per_token:.1f} ms/token")
    if st.mean_accepted:
        parts.append(f"{st.mean_accepted:.2f} accepted/step")
    return " · ".join(parts)


def _du(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
