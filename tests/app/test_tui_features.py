"""Pilot tests of the features a user relies on beyond sending a message: sessions (new, rename,
delete, continue), Markdown export, regenerate, per-session system prompt, copying a message, and
a model that cannot load (a bad config.toml: test_tui_actions.py). Real Engine (few tokens), real Memory
on a temporary data folder."""
from __future__ import annotations

import pytest
from textual.widgets import Input, TextArea

from app.settings import Loaded, Settings
from app.tui.screens.dialogs import ConfirmDialog, InputDialog, TextDialog
from app.tui.widgets.composer import Composer
from app.tui.widgets.sessions import SessionItem, SessionList
from app.tui.widgets.transcript import Transcript
from support.tui_helpers import SIZE, RecordingApp, chat, idle, locations_in, make_app, ready, send, shown, wait

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def titles(screen) -> list[str]:
    return [item.session.title for item in screen.query_one(SessionList).query(SessionItem)]


async def test_sessions_new_rename_continue_delete(real_engine, tmp_path):
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen, memory = app.screen, app.runtime.memory
        await chat(pilot, "First chat")
        first = screen.session_id
        assert first is not None
        # the sidebar is refreshed after the answer is saved, as the later steps wait for it too
        await wait(pilot, lambda: titles(screen) == ["First chat"], 10)

        await pilot.press("ctrl+n")                          # new session
        await wait(pilot, lambda: screen.session_id is None and screen.query_one(Transcript).messages() == [], 10)
        await chat(pilot, "Second chat")
        second = screen.session_id
        assert second not in (None, first)
        assert [s.id for s in memory.list_sessions(mode="assistant")] == [second, first]
        await wait(pilot, lambda: titles(screen) == ["Second chat", "First chat"], 10)

        screen.focus_input()                                 # rename from the composer (F6)
        await pilot.press("f6")
        await wait(pilot, lambda: isinstance(app.screen, InputDialog), 10, "F6's rename dialog")
        dialog_input = app.screen.query_one(Input)
        assert dialog_input.value == "Second chat"
        dialog_input.value = ""
        await pilot.press(*"Renamed")
        await pilot.press("enter")
        await wait(pilot, lambda: titles(screen) == ["Renamed", "First chat"], 10)
        assert memory.get_session(second).title == "Renamed"

        sidebar = screen.query_one(SessionList)              # continue the first session
        sidebar.focus()
        sidebar.index = 0
        await pilot.press("down", "enter")
        await wait(pilot, lambda: screen.session_id == first and len(screen.query_one(Transcript).messages()) == 2, 10)
        views = screen.query_one(Transcript).messages()
        assert [v.role for v in views] == ["user", "assistant"] and views[0].text == "First chat"
        await chat(pilot, "More")
        assert [m.role for m in memory.messages(first)] == ["user", "assistant"] * 2
        assert len(memory.messages(second)) == 2

        screen.focus_input()                                 # delete it, with confirmation (F7)
        await pilot.press("f7")
        await wait(pilot, lambda: isinstance(app.screen, ConfirmDialog), 10, "F7's confirmation")
        await pilot.press("escape")                          # cancelling keeps it
        await wait(pilot, lambda: app.screen is screen, 10)
        assert memory.get_session(first) is not None
        await pilot.press("f7")
        await wait(pilot, lambda: isinstance(app.screen, ConfirmDialog), 10)
        await pilot.click("#ok")
        await wait(pilot, lambda: screen.session_id is None and titles(screen) == ["Renamed"], 10)
        assert memory.get_session(first) is None and memory.messages(first) == []
        assert [s.id for s in memory.list_sessions(mode="assistant")] == [second]
        assert screen.query_one(Transcript).messages() == []


async def test_export_session_to_markdown(real_engine, tmp_path):
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        await chat(pilot, "Export me please")
        assert isinstance(app.focused, Composer)
        await pilot.press("ctrl+e")
        exports = tmp_path / "data" / "exports"
        await wait(pilot, lambda: any(m.startswith("Exported to") for m in shown(app)), 10, "the export")
        files = list(exports.glob("*.md"))
        assert len(files) == 1, "Ctrl+E wrote no export"
        text = files[0].read_text(encoding="utf-8")
        reply = app.runtime.memory.messages(screen.session_id)[1].text
        assert "## User" in text and "Export me please" in text
        assert "## Assistant" in text and reply.strip() and reply.strip() in text


async def test_regenerate_replaces_last_reply(real_engine, tmp_path):
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen, memory = app.screen, app.runtime.memory
        await chat(pilot, "Say something")
        before = memory.messages(screen.session_id)
        assert [m.role for m in before] == ["user", "assistant"]
        await pilot.press("ctrl+r")
        await wait(pilot, lambda: screen.request == 2 and idle(screen))
        after = memory.messages(screen.session_id)
        assert [m.role for m in after] == ["user", "assistant"]
        # one reply for the turn, a new one (SQLite may reuse the deleted row's id: compare times)
        assert after[0].id == before[0].id and after[1].created > before[1].created
        views = screen.query_one(Transcript).messages()
        assert [v.role for v in views] == ["user", "assistant"]
        assert views[1].text == after[1].text and views[1].message_id == after[1].id


async def test_system_prompt_per_session(real_engine, tmp_path, monkeypatch):
    seen: list[list[dict]] = []
    chat_ids = real_engine.chat_ids
    monkeypatch.setattr(real_engine, "chat_ids", lambda msgs: seen.append(msgs) or chat_ids(msgs))
    app = make_app(real_engine, tmp_path, retrieval=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen, memory = app.screen, app.runtime.memory
        await pilot.press("f4")
        await wait(pilot, lambda: isinstance(app.screen, TextDialog), 10, "F4's dialog")
        app.screen.query_one(TextArea).text = "You are a pirate. Answer like one."
        await pilot.click("#ok")
        await wait(pilot, lambda: screen.session_id is not None and memory.get_session(screen.session_id)
                   .system_prompt == "You are a pirate. Answer like one.", 10)
        sid = screen.session_id
        seen.clear()
        await chat(pilot, "Hello")
        assert screen.session_id == sid
        assert seen and seen[-1][0] == {"role": "system", "content": "You are a pirate. Answer like one."}
        await pilot.press("f4")                              # shown again, pre-filled
        await wait(pilot, lambda: isinstance(app.screen, TextDialog), 10)
        assert app.screen.query_one(TextArea).text == "You are a pirate. Answer like one."
        await pilot.press("escape")


async def test_copy_focused_message(real_engine, tmp_path, monkeypatch):
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        copied: list[str] = []
        monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
        screen = app.screen
        await chat(pilot, "Copy this")
        user, reply = screen.query_one(Transcript).messages()
        reply.focus()
        await pilot.press("c")
        user.focus()
        await pilot.press("c")
        stored = app.runtime.memory.messages(screen.session_id)
        assert copied == [stored[1].text, "Copy this"] and copied[0].strip()
        assert any("copied" in m for m in shown(app))


async def test_missing_model_notifies_then_recovers_and_quits(real_engine, tmp_path):
    from app.tui.runtime import load_engine

    def factory(settings, locs, progress):                   # the real loader for the bad path
        return real_engine if settings.model is None else load_engine(settings, locs, progress)
    locs = locations_in(tmp_path)
    loaded = Loaded(Settings(model=str(tmp_path / "missing.gguf"), max_tokens=8), locs.config_file)
    app = RecordingApp(loaded, locs, engine_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: shown(app, "Cannot load the model"), 30)
        assert app.runtime is None and "not loaded" in app.status
        assert any("missing.gguf" in m for m in shown(app))
        await send(pilot, "Hi")                              # still up, and says why it cannot answer
        await wait(pilot, lambda: any("not loaded" in m for m in shown(app)), 10)
        assert not any("still loading" in m for m in shown(app))
        app.apply_changes({"model": None}, save=False)       # fixed in F8: reloads
        await ready(pilot)
        await chat(pilot, "Hi")
        assert [m.role for m in app.runtime.memory.messages(app.screen.session_id)] == ["user", "assistant"]
        await pilot.press("ctrl+q")
        await wait(pilot, lambda: not app.is_running, 10)
    assert app.return_code in (0, None)


async def test_keys_typed_in_a_burst_are_sent_whole(real_engine, tmp_path):
    """Keys that arrive together (typing while the app is busy, a paste-like burst from tmux) are
    all in the message when Enter sends it: Enter must not overtake the characters before it."""
    from textual import events
    app = make_app(real_engine, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        screen.focus_input()
        await wait(pilot, lambda: isinstance(app.focused, Composer), 10)
        for ch in "Hello":                                   # queued without waiting in between
            app.post_message(events.Key(ch, ch))
        app.post_message(events.Key("enter", "\r"))
        await wait(pilot, lambda: screen.request == 1 and idle(screen))
        assert [v.text for v in screen.query_one(Transcript).messages()][:1] == ["Hello"]
        assert screen.query_one(Composer).text == ""
