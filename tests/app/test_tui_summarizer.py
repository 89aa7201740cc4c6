"""The summarizer's rough edges (issue 24): its status follows the request to its end, another
document gets its own session, the file row's state is never cut, Esc leaves no full or waiting
bar, and a summary cut at the token limit says so. Scripted engine, real memory (fast tier)."""
from __future__ import annotations

import dataclasses

from textual.widgets import Label, ProgressBar

from app.tui.widgets.transcript import Transcript
from engine.events import Done
from support.fakes import FakeEngine
from support.tui_helpers import hash_memory, idle, make_app, ready, wait


def status(screen) -> str:
    return str(screen.query_one("#parts", Label).render())


async def open_summarizer(pilot):
    await ready(pilot)
    await pilot.press("f3")
    screen = pilot.app.screen
    await wait(pilot, lambda: screen.runtime is not None and screen.is_current)
    return screen


async def summarize(pilot, screen, *paths) -> None:
    n = screen.request
    assert screen.summarize(list(paths))
    await wait(pilot, lambda: idle(screen) and screen.request == n + 1, 60, "the summary")


async def test_status_ends_with_the_summary_and_the_state_label_is_whole(tmp_path):
    doc = tmp_path / "report.txt"
    doc.write_text("The pumps were checked on Monday and the valves on Tuesday. " * 12)
    app = make_app(FakeEngine("A short summary."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_summarizer(pilot)
        screen.agent.part_tokens = 200            # bytes are tokens to the fake: several parts
        await summarize(pilot, screen, doc)
        await pilot.pause()
        assert "combining" not in status(screen) and "done" in status(screen), status(screen)
        state = screen.query_one(".file-state", Label)
        assert str(state.render()) == "ingested" and state.region.width >= len("ingested")


async def test_another_document_gets_its_own_session_and_another_style_stays(tmp_path):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("The first document is about the harbour.\n" * 3)
    second.write_text("The second document is about the mountains.\n" * 3)
    app = make_app(FakeEngine("A short summary."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_summarizer(pilot)
        await summarize(pilot, screen, first)
        one = screen.session_id
        screen.action_cycle_style()
        await summarize(pilot, screen, first)          # the same document in another style
        assert screen.session_id == one
        await summarize(pilot, screen, second)
        assert screen.session_id not in (None, one)
        memory = app.runtime.memory
        assert sorted(s.title for s in memory.list_sessions(mode="summarizer")) == [
            "Summary: first.txt", "Summary: second.txt"]
        assert [m.text for m in memory.messages(screen.session_id) if m.role == "user"] == [
            "Summarize (detailed): second.txt"]
        await pilot.pause()
        shown = [v.text for v in screen.query_one(Transcript).messages() if v.role == "user"]
        assert shown == ["Summarize (detailed): second.txt"]


class CutEngine(FakeEngine):
    """Every answer stops at the token limit."""

    def generate(self, prompt, **kw):
        for event in super().generate(prompt, **kw):
            yield dataclasses.replace(event, stop_reason="max_tokens") if isinstance(event, Done) else event


async def test_a_summary_cut_at_the_token_limit_says_so(tmp_path):
    doc = tmp_path / "note.txt"
    doc.write_text("The meeting moved to Friday at 10am in room 4.\n" * 3)
    app = make_app(CutEngine("one two three four five six"), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_summarizer(pilot)
        await summarize(pilot, screen, doc)
        await pilot.pause()
        assert "stopped at the token limit (" in status(screen), status(screen)
        footer = str(screen.query_one(Transcript).last("assistant").query_one(".footer").render())
        assert "stopped at the token limit (" in footer and "F5" not in footer, footer


async def test_esc_while_reading_leaves_no_full_or_waiting_bar(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("".join(f"Paragraph {i} tells of the harbour, the ships and the weather that week.\n"
                           for i in range(30000)))
    other = tmp_path / "other.txt"
    other.write_text("Never read: the first file was cancelled.\n")
    app = make_app(FakeEngine("Hello there."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_summarizer(pilot)
        screen.summarize([big, other])
        await wait(pilot, lambda: any(bar.progress > 0 for bar in screen.query(ProgressBar)), 60, "reading")
        await pilot.press("escape")
        await wait(pilot, lambda: idle(screen), 20, "the read-in to stop")
        await pilot.pause()
        bars = list(screen.query(ProgressBar))
        assert all(bar.total is not None and bar.percentage == 0 for bar in bars), \
            [(bar.total, bar.progress) for bar in bars]
        states = [str(label.render()) for label in screen.query(".file-state")]
        assert states == ["cancelled", "not read"], states
        assert status(screen) == "cancelled"
