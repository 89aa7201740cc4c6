"""Pilot tests per mode with the real Engine (embedded model, few tokens) and a real Memory
(real MiniLM, real chromadb): the slow tier's proof that the app works end to end."""
from __future__ import annotations

import pytest

from app.tui.widgets.transcript import Transcript
from support.tui_helpers import SIZE, idle, make_app, palette_highlight, ready, send, wait

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


async def test_send_streams_text_and_updates_panels(real_engine, tmp_path):
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Hi")
        screen = app.screen
        await wait(pilot, lambda: screen.request == 1 and idle(screen))
        views = screen.query_one(Transcript).messages()
        assert [v.role for v in views] == ["user", "assistant"]
        assert views[1].text.strip() and views[1].stats.new_tokens > 0
        assert "tok" in str(views[1].query_one(".footer").render())
        assert screen.metrics.steps and screen.metrics.done is not None
        # the panels are redrawn half a frame after the last text (screens/base.py, drain): an
        # answer that ends within one frame is idle before they are
        await wait(pilot, lambda: f"({screen.metrics.steps} steps)" in str(screen.query_one("#acc-figures").render()))
        stored = app.runtime.memory.messages(screen.session_id)
        assert [m.role for m in stored] == ["user", "assistant"] and stored[1].token_ids
        app._probe()   # the Device panel shows the engine's own memory: the weights as codes
        weights = app.device.engine_mb["weights"]
        assert 85 < weights < 110, weights   # ~97 MB: the GGUF's Q4_1/Q8_0 bytes (fp16 heads)
        screen.show_panels()
        await pilot.pause()
        from app.tui.widgets.panels import DevicePanel
        device = str(screen.query_one(DevicePanel).render())
        assert "engine" in device and f"weights {weights:.0f}" in device


async def test_cancel_mid_generation(real_engine, tmp_path):
    # room for ~10 s of decoding: 200 tokens could be over before Esc lands (~130 tok/s now)
    app = make_app(real_engine, tmp_path, max_tokens=1200)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Write a long story about a robot.")
        screen = app.screen
        view = None

        def streaming():
            nonlocal view
            view = screen.views.get(1)
            return view is not None and view.text
        await wait(pilot, streaming)
        await pilot.press("escape")
        assert screen.active is None                        # the UI lets go at once
        await wait(pilot, lambda: "cancelled" in str(view.query_one(".footer").render()), 10)
        await wait(pilot, lambda: idle(screen), 60)
        stored = app.runtime.memory.messages(screen.session_id)
        assert [m.role for m in stored] == ["user", "assistant"]      # the partial answer is kept
        assert stored[1].text.strip() and stored[1].stats.stop_reason == "cancelled"


async def test_switch_modes(real_engine, tmp_path):
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.current_mode == "assistant"
        await pilot.press("f3")
        assert app.current_mode == "summarizer"
        await pilot.press("ctrl+t")
        assert app.current_mode == "agent"
        await pilot.press("ctrl+t")
        assert app.current_mode == "assistant"
        await pilot.press("ctrl+p")
        await pilot.press(*"Mode: Summarizer")
        await wait(pilot, lambda: "Mode: Summarizer" in palette_highlight(app), 10, "the palette's best match")
        await pilot.press("enter")
        await wait(pilot, lambda: app.current_mode == "summarizer", 10)


async def test_drop_file_and_get_summary(real_engine, tmp_path):
    doc = tmp_path / "note.txt"
    doc.write_text("The meeting moved to Friday at 10am in room 4. Bring the budget report.\n" * 3)
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        screen = app.screen
        app.screen.query_one("#transcript").focus()
        from textual import events
        screen.post_message(events.Paste(f"'{doc}'"))       # what a drag-and-drop sends
        await wait(pilot, lambda: screen.request == 1 and idle(screen))
        views = screen.query_one(Transcript).messages()
        assert [v.role for v in views] == ["user", "assistant"] and views[1].text.strip()
        assert "note.txt" in views[0].text
        assert "ingested" in str(screen.query_one(".file-state").render())
        docs = app.runtime.memory.list_documents()
        assert [d.name for d in docs] == ["note.txt"]


async def test_reopen_session_after_restart(real_engine, tmp_path):
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Remember the word teapot.")
        await wait(pilot, lambda: app.screen.request == 1 and idle(app.screen))
        first = [v.text for v in app.screen.query_one(Transcript).messages()]
    again = make_app(real_engine, tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait(pilot, lambda: len(again.screen.query_one(Transcript).messages()) == 2, 30)
        assert [v.text for v in again.screen.query_one(Transcript).messages()] == first
