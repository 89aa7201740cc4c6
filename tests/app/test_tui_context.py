"""The context a message was sent with, in the transcript (a collapsed line that expands), and the
memory switches of the composer (Ctrl+L) and the palette. Rendering only: a scripted engine and the
hash embedder on a real memory; the real model's proof is tests/agents/test_assistant_retrieval.py."""
from __future__ import annotations

import pytest
from textual.widgets import Collapsible

from app.tui.widgets.composer import Composer
from app.tui.widgets.transcript import Transcript
from support.fakes import FakeEngine
from support.tui_helpers import SIZE, chat, hash_memory, make_app, ready, wait

pytestmark = pytest.mark.timeout(120)


def _dragon_story(memory):
    s = memory.new_session("assistant", "Dragon story")
    memory.add_message(s.id, "user", "Tell me about the dragon Erebo")
    memory.add_message(s.id, "assistant", "Erebo built a castle of black stone.")
    memory.add_message(s.id, "user", "What did the dragon Erebo eat?")
    memory.add_message(s.id, "assistant", "Erebo ate apples from the valley.")


async def test_the_context_line_is_collapsed_and_expands(tmp_path):
    app = make_app(FakeEngine("An answer."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        memory = app.runtime.memory
        _dragon_story(memory)
        await chat(pilot, "What about the dragon Erebo?")
        screen = app.screen
        user = screen.query_one(Transcript).last("user")
        line = user.query_one(Collapsible)
        assert line.title == "context: 2 notes from 'Dragon story'" and line.collapsed
        notes = line.query_one(".context-notes")
        assert not notes.region.height                       # collapsed: one line, no notes
        line.collapsed = False
        await wait(pilot, lambda: notes.region.height >= 2, 5, "the notes")
        assert "Erebo built a castle" in str(notes.render())
        assert not screen.query_one(Transcript).last("assistant").query(Collapsible)
        # reopened from memory: the line comes from the message's stored context
        sid = screen.session_id
        await screen.open_session(sid)
        user = screen.query_one(Transcript).last("user")
        assert user.query_one(Collapsible).title == "context: 2 notes from 'Dragon story'"


async def test_ctrl_l_sends_the_next_message_without_memory(tmp_path):
    app = make_app(FakeEngine("An answer."), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        memory = app.runtime.memory
        _dragon_story(memory)
        screen = app.screen
        screen.focus_input()
        await pilot.press("ctrl+l")
        composer = screen.query_one(Composer)
        await wait(pilot, lambda: "next: without memory" in str(composer.border_title), 5)
        await chat(pilot, "What about the dragon Erebo?")
        assert "next:" not in str(composer.border_title)       # one message only
        user = screen.query_one(Transcript).last("user")
        assert not user.query(Collapsible)
        assert memory.messages(screen.session_id)[0].context is None
        # the palette's switch is kept with the session
        await screen.toggle_session_memory()
        assert memory.get_session(screen.session_id).retrieval is False
        await chat(pilot, "And the dragon Erebo's castle?")
        assert memory.messages(screen.session_id)[2].context is None
        await screen.toggle_session_memory()
        await chat(pilot, "And the dragon Erebo's apples?")
        assert memory.messages(screen.session_id)[4].context is not None
