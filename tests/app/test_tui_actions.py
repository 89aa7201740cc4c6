"""What users do besides sending a message, and what goes wrong around them: settings (F8), help,
documents, cancelling a read-in, an unusable memory folder, continue/edit/delete, the context
gauge, quitting mid-stream, and a UI that never waits on memory. Scripted engine, real memory."""
from __future__ import annotations

import threading
import time
import tomllib

import pytest
from textual.widgets import Input, Label, ProgressBar, Select, TextArea
from textual.widgets.select import InvalidSelectValueError

from app.settings import Loaded, Settings, load
from app.tui.screens.dialogs import ConfirmDialog, TextDialog
from app.tui.screens.help import HelpScreen
from app.tui.screens.settings import SettingsScreen
from app.tui.widgets.composer import Composer
from app.tui.widgets.transcript import Transcript
from engine.methods import METHODS
from support.fakes import FakeEngine
from support.tui_helpers import SIZE, chat, hash_memory, idle, locations_in, make_app, ready, shown, wait


async def test_settings_offer_the_engines_methods_and_save_only_changes(tmp_path):
    locs = locations_in(tmp_path)
    locs.config.mkdir(parents=True)
    locs.config_file.write_text('model = "/models/mine.gguf"\ntop_p = 0.9\n')
    # HEXA_MAX_TOKENS=7 and --method sam are one-off overrides for this run
    loaded = load(locs.config_file, env={"HEXA_MAX_TOKENS": "7"}, flags={"method": "sam", "model": None})
    loaded.settings = Settings(**{**loaded.settings.__dict__, "model": None})   # the fake engine loads
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory, loaded=loaded)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f8")
        await wait(pilot, lambda: isinstance(app.screen, SettingsScreen), 10)
        dialog = app.screen
        method = dialog.query_one("#method", Select)
        for name in METHODS:                                   # every method the engine has...
            method.value = name
        with pytest.raises(InvalidSelectValueError):           # ...and none it does not
            method.value = "pld"
        labels = " ".join(str(label.render()) for label in dialog.query(Label))
        assert "HEXA_MAX_TOKENS this run" in labels and "--method this run" in labels
        method.value = "hexa-fill"
        dialog.query_one("#temperature", Input).value = "0.3"
        await pilot.click("#ok")
        await wait(pilot, lambda: not isinstance(app.screen, SettingsScreen), 10)
        table = tomllib.loads(locs.config_file.read_text())
        assert table == {"model": "/models/mine.gguf", "top_p": 0.9, "method": "hexa-fill", "temperature": 0.3}
        assert app.settings.method == "hexa-fill" and app.settings.max_tokens == 7


async def test_a_bad_setting_is_reported_and_only_it_is_dropped(tmp_path):
    locs = locations_in(tmp_path)
    locs.config.mkdir(parents=True)
    locs.config_file.write_text('max_tokens = 99\n[keymap]\n"chat.snd" = "ctrl+s"\n')
    loaded = load(locs.config_file, env={"HEXA_THREADS": "abc"}, strict=False)
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory, loaded=loaded)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        problems = " | ".join(shown(app, "Settings"))
        assert "HEXA_THREADS" in problems and "chat.snd" in problems
        assert app.settings.max_tokens == 99


async def test_help_title_shows_the_keymap_table_name(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        await wait(pilot, lambda: isinstance(app.screen, HelpScreen), 10)
        title = str(app.screen.query_one(".title", Label).render())
        assert "under [keymap] in config.toml" in title


async def test_summaries_are_titled_after_their_documents_and_folders_are_named(tmp_path):
    doc = tmp_path / "note.txt"
    doc.write_text("The meeting moved to Friday at 10am in room 4.\n" * 3)
    app = make_app(FakeEngine("A short summary."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        screen = app.screen
        await wait(pilot, lambda: screen.runtime is not None and screen.is_current)
        assert not screen.summarize([tmp_path])
        assert any("is a folder" in m and "No such file" not in m for m in shown(app))
        assert screen.summarize([doc])
        await wait(pilot, lambda: idle(screen) and screen.request == 1)
        titles = [s.title for s in app.runtime.memory.list_sessions(mode="summarizer")]
        assert titles == ["Summary: note.txt"]


async def test_esc_stops_reading_a_big_document_and_keeps_nothing(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("".join(f"Paragraph {i} tells of the harbour, the ships and the weather that week.\n"
                           for i in range(30000)))
    engine = FakeEngine("Hello there.")
    app = make_app(engine, tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        screen = app.screen
        await wait(pilot, lambda: screen.runtime is not None and screen.is_current)
        screen.summarize([big])
        memory = app.runtime.memory
        await wait(pilot, lambda: any(bar.progress > 0 for bar in screen.query(ProgressBar)), 60, "reading")
        t0 = time.monotonic()
        await pilot.press("escape")
        await wait(pilot, lambda: idle(screen), 20, "the read-in to stop")
        stopped = time.monotonic() - t0
        assert stopped < 5, f"reading went on for {stopped:.1f} s after Esc"
        assert memory.list_documents() == []
        assert not engine.prompts, "a cancelled read-in went on to summarize"
        await pilot.press("f2")                                  # and chat is not kept waiting
        t0 = time.monotonic()
        await chat(pilot, "Hi")
        assert time.monotonic() - t0 < 10


async def test_an_unusable_memory_folder_still_lets_you_chat(tmp_path):
    from memory import StoreError

    def refuse(locs, engine):
        raise StoreError(f"memory folder {locs.data}/memory is not writable (read-only?)")
    app = make_app(FakeEngine(), tmp_path, memory_factory=refuse)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        warning = " ".join(shown(app, "Memory unavailable"))
        assert "not writable" in warning and "temporary" in warning
        assert "Cannot load the model" not in [t for t, _, _ in app.shown]
        assert "temporary" in app.device.memory
        await chat(pilot, "Still there?")
        stored = app.runtime.memory.messages(app.screen.session_id)
        assert [m.role for m in stored] == ["user", "assistant"]
        folder = app.runtime.temporary
        assert folder is not None and folder.exists()
    assert not folder.exists(), "the temporary memory outlived the app"


async def test_continue_extends_the_last_response_in_place(tmp_path):
    engine = FakeEngine("one two three")
    app = make_app(engine, tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await chat(pilot, "Count")
        screen = app.screen
        first = app.runtime.memory.messages(screen.session_id)[1]
        engine.reply = " four five"
        await pilot.press("f5")
        await wait(pilot, lambda: idle(screen) and screen.request == 2)
        stored = app.runtime.memory.messages(screen.session_id)
        assert [m.role for m in stored] == ["user", "assistant"] and stored[1].id == first.id
        assert stored[1].text == "one two three four five"
        assert stored[1].token_ids == first.token_ids + engine.encode(" four five")
        assert engine.prompts[-1][-len(first.token_ids):] == first.token_ids   # resumed after it
        assert screen.query_one(Transcript).last().text == "one two three four five"


async def test_edit_and_delete_one_message(tmp_path):
    app = make_app(FakeEngine("An answer."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await chat(pilot, "A question")
        screen, memory = app.screen, app.runtime.memory
        user, reply = screen.query_one(Transcript).messages()
        reply.focus()
        await pilot.press("e")
        await wait(pilot, lambda: isinstance(app.screen, TextDialog), 10)
        app.screen.query_one(TextArea).text = "An edited answer."
        await pilot.click("#ok")
        await wait(pilot, lambda: memory.get_message(reply.message_id).text == "An edited answer.", 10)
        assert memory.get_message(reply.message_id).token_ids == []     # no longer the model's output
        assert reply.text == "An edited answer."
        user.focus()
        await pilot.press("d")
        await wait(pilot, lambda: isinstance(app.screen, ConfirmDialog), 10)
        await pilot.click("#ok")
        await wait(pilot, lambda: memory.get_message(user.message_id) is None, 10)
        await wait(pilot, lambda: [v.role for v in screen.query_one(Transcript).messages()] == ["assistant"], 10)


async def test_the_composer_shows_how_full_the_context_is(tmp_path):
    """The gauge counts exactly the prompt ids sent, retrieved context included (it used to count
    the conversation before retrieval: 2,067 shown for a 2,612-token prompt)."""
    engine = FakeEngine("An answer.")
    app = make_app(engine, tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        memory = app.runtime.memory
        earlier = memory.new_session("assistant", "Dragon story")
        memory.add_message(earlier.id, "user", "Tell me a question about the dragon Erebo")
        memory.add_message(earlier.id, "assistant", "Erebo the dragon built a castle of black stone.")
        await chat(pilot, "A question about the dragon")
        user = memory.messages(app.screen.session_id)[0]
        assert user.context is not None and "Erebo" in user.context.text    # sent with context
        sent, answer = len(engine.prompts[-1]), app.screen.metrics.done.new_tokens
        gauge = str(app.screen.query_one(Composer).border_subtitle)
        assert f"context {sent:,} sent + {answer} answer / 2,048" in gauge
        assert app.screen.sent_tokens == sent


async def test_ctrl_q_mid_stream_keeps_the_partial_answer(tmp_path):
    engine = FakeEngine(" ".join(f"word{i}" for i in range(400)), delay=0.02)
    app = make_app(engine, tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        screen.focus_input()
        await pilot.press(*"Talk", "enter")
        transcript = screen.query_one(Transcript)
        await wait(pilot, lambda: "word20" in getattr(transcript.last("assistant"), "text", ""))
        t0 = time.monotonic()
        await pilot.press("ctrl+q")
        await wait(pilot, lambda: not app.is_running, 10, "the app to quit")
        assert time.monotonic() - t0 < 3
    from memory import Memory
    with Memory.open(tmp_path / "data") as memory:
        session = memory.list_sessions()[0]
        answer = memory.messages(session.id)[-1]
        assert answer.role == "assistant" and answer.text.startswith("word0 word1") and "word399" not in answer.text


async def test_a_slow_memory_never_freezes_the_ui(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await chat(pilot, "Hi")
        memory = app.runtime.memory
        release = threading.Event()
        real_rename = memory.rename_session

        def stuck_rename(*args):                     # fault injection: a write that waits on a lock
            release.wait(10)
            return real_rename(*args)
        memory.rename_session = stuck_rename
        screen = app.screen
        await pilot.press("f6")
        await wait(pilot, lambda: app.screen is not screen, 10)
        app.screen.query_one(Input).value = "Renamed"
        await pilot.press("enter")
        await wait(pilot, lambda: app.screen is screen, 10)
        screen.focus_input()
        t0 = time.monotonic()
        await pilot.press(*"typing")
        assert screen.query_one(Composer).text == "typing" and time.monotonic() - t0 < 2
        release.set()
        await wait(pilot, lambda: memory.get_session(screen.session_id).title == "Renamed", 10)


async def test_a_session_opens_from_the_sidebar(tmp_path):
    from app.tui.widgets.sessions import SessionItem, SessionList

    app = make_app(FakeEngine("ok"), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        await chat(pilot, "First chat")
        first = screen.session_id
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: screen.session_id is None, 10)
        await chat(pilot, "Second chat")
        sidebar = screen.query_one(SessionList)
        await wait(pilot, lambda: len(sidebar.query(SessionItem)) == 2, 10)
        sidebar.focus()
        sidebar.index = 0
        await pilot.press("down", "enter")
        await wait(pilot, lambda: screen.session_id == first, 10, "the first session")
        await wait(pilot, lambda: [v.text for v in screen.query_one(Transcript).messages()] == ["First chat", "ok"], 10)
