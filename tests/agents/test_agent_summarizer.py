"""Summarizer agent with the real engine (few tokens) and a real memory."""
from __future__ import annotations

import pytest

from agents.events import Part, Saved
from agents.summarizer import Summarizer
from app.settings import Settings
from engine.events import Done, Notice, Text

pytestmark = pytest.mark.timeout(300)

def test_short_document_single_pass(real_engine, memory, tmp_path):
    doc = tmp_path / "a.txt"
    doc.write_text("Alice met Bob in Paris on Monday to sign the contract.")
    agent = Summarizer(real_engine, memory, Settings(max_tokens=8))
    seen = []
    d = agent.ingest(doc, progress=lambda done, total: seen.append((done, total)))
    events = list(agent.summarize(None, [d.id], "bullets"))
    sid = [e for e in events if isinstance(e, Saved)][0].session_id
    assert memory.get_session(sid).title == "Summary: a.txt"
    assert not any(isinstance(e, Part) for e in events)
    assert any(isinstance(e, Text) for e in events)
    saved = [e for e in events if isinstance(e, Saved)]
    assert [s.role for s in saved] == ["user", "assistant"]
    assert [m.role for m in memory.messages(sid)] == ["user", "assistant"]


def test_long_document_map_reduce(real_engine, memory, tmp_path):
    doc = tmp_path / "long.txt"
    doc.write_text("\n\n".join(f"Paragraph {i}: the committee reviewed item {i} and approved it."
                               for i in range(40)))
    agent = Summarizer(real_engine, memory, Settings(max_tokens=8), part_tokens=200)
    d = agent.ingest(doc)
    sid = memory.new_session("summarizer").id
    events = list(agent.summarize(sid, [d.id], "short"))
    parts = [e for e in events if isinstance(e, Part)]
    assert parts and parts[0].stage == "map" and parts[-1].stage == "reduce"
    assert any(isinstance(e, Notice) and "parts" in e.message for e in events)
    assert sum(isinstance(e, Done) for e in events) == 1        # only the final pass reaches the app
    assert memory.messages(sid)[-1].role == "assistant"
