"""One message of a session (issue 24): a user message edited can be answered again (the answers
below it re-run), and deleting a message keeps the transcript where the user was."""
from __future__ import annotations

from textual.widgets import Button, TextArea

from app.tui.screens.dialogs import ConfirmDialog, EditDialog
from app.tui.widgets.transcript import Transcript
from support.fakes import FakeEngine
from support.tui_helpers import chat, hash_memory, idle, make_app, ready, wait


async def test_edit_and_resend_reruns_the_answer_below(tmp_path):
    engine = FakeEngine(["Paris is the capital.", "Berlin is the capital.", "Rome is the capital."])
    app = make_app(engine, tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        screen = app.screen
        await chat(pilot, "Capital of France?")
        await chat(pilot, "And of Germany?")
        transcript = screen.query_one(Transcript)
        first = transcript.messages()[0]
        first.focus()
        await pilot.press("e")
        await wait(pilot, lambda: isinstance(app.screen, EditDialog), 10, "the edit dialog")
        app.screen.query_one(TextArea).text = "Capital of Italy?"
        await pilot.click("#resend")
        await wait(pilot, lambda: screen.request == 3 and idle(screen), 30, "the answer again")
        await pilot.pause()
        shown = [(v.role, v.text) for v in transcript.messages()]
        assert shown == [("user", "Capital of Italy?"), ("assistant", "Rome is the capital.")], shown
        stored = [(m.role, m.text) for m in app.runtime.memory.messages(screen.session_id)]
        assert stored == shown
        assert engine.decode(engine.prompts[-1]).count("Capital of Italy?") == 1
        assert "France" not in engine.decode(engine.prompts[-1])


async def test_save_only_keeps_the_answers(tmp_path):
    app = make_app(FakeEngine("An answer."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        screen = app.screen
        await chat(pilot, "Hello")
        view = screen.query_one(Transcript).messages()[0]
        view.focus()
        await pilot.press("e")
        await wait(pilot, lambda: isinstance(app.screen, EditDialog), 10, "the edit dialog")
        app.screen.query_one(TextArea).text = "Hello there"
        app.screen.query_one("#ok", Button).press()
        await wait(pilot, lambda: view.text == "Hello there", 10, "the edit")
        assert screen.request == 1
        assert [m.text for m in app.runtime.memory.messages(screen.session_id)] == ["Hello there", "An answer."]


async def test_deleting_a_message_keeps_the_scroll_position(tmp_path):
    app = make_app(FakeEngine("x"), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        screen = app.screen
        memory = app.runtime.memory
        session = memory.new_session("assistant", title="Long", model="fake")
        for i in range(40):
            memory.add_message(session.id, "user", f"Question {i}\n\nwith a second paragraph", mode="assistant")
            memory.add_message(session.id, "assistant", f"Answer {i}", mode="assistant")
        await screen.open_session(session.id)
        transcript = screen.query_one(Transcript)
        await wait(pilot, lambda: transcript.max_scroll_y > 50, 10, "a long transcript")
        # the transcript lays itself out over several frames on a busy machine: wait until it stops growing
        last = -1
        for _ in range(50):
            if transcript.max_scroll_y == last and len(transcript.messages()) == 80:
                break
            last = transcript.max_scroll_y
            await pilot.pause(0.1)
        views = transcript.messages()
        target = views[40]
        transcript.scroll_to_widget(target, animate=False, top=True)
        await pilot.pause()
        target.focus(scroll_visible=False)
        await pilot.pause()
        before = transcript.scroll_y
        assert 10 < before < transcript.max_scroll_y - 10
        await pilot.press("d")
        await wait(pilot, lambda: isinstance(app.screen, ConfirmDialog), 10, "the confirmation")
        app.screen.query_one("#ok", Button).press()
        await wait(pilot, lambda: target.parent is None, 10, "the deletion")
        await pilot.pause(0.5)            # any scroll animation would have moved it by now
        assert abs(transcript.scroll_y - before) <= 4, (before, transcript.scroll_y)
        assert isinstance(app.focused, type(target)) and app.focused is not target
