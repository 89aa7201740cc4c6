"""``hexa ask`` shows what memory sent with a message (-v: the notes and the prompt's size) and
switches retrieval per message (--no-retrieval / --retrieval)."""
from __future__ import annotations

import re

import pytest

from test_cli import hexa, one_line_error


@pytest.mark.slow
def test_ask_shows_and_switches_what_memory_sends(tmp_path):
    from memory import Memory

    with Memory.open(tmp_path / "data") as memory:          # the real MiniLM
        s = memory.new_session("assistant", "Dragon story")
        memory.add_message(s.id, "user", "Tell me about the dragon Erebo and his castle.")
        memory.add_message(s.id, "assistant", "Erebo built a castle of black stone with seven towers.")
    question = "What did the dragon Erebo build?"
    r = hexa("ask", "--save", "-v", question, "--max-tokens", "4", home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "hexa: context: 1 note from 'Dragon story'" in r.stderr
    assert re.search(r"hexa:   \[0\.\d\d\] Dragon story \(\d+ tok\): User: Tell me about the dragon Erebo", r.stderr)
    assert re.search(r"hexa: prompt \d+ tokens", r.stderr)
    r = hexa("ask", "--save", "-v", "--no-retrieval", question, "--max-tokens", "4", home=tmp_path)
    assert r.returncode == 0 and "hexa: context: none retrieved" in r.stderr
    r = hexa("ask", "--save", "What is the capital of France?", "--max-tokens", "4", home=tmp_path)
    assert r.returncode == 0 and "context:" not in r.stderr               # nothing relevant: nothing said
    assert "--retrieval needs a conversation" in one_line_error(hexa("ask", "--retrieval", "hi", home=tmp_path))
