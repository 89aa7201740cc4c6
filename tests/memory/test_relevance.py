"""What retrieval sends: the calibrated threshold measured on the labelled set (real MiniLM,
slow), and the rules around it (threshold, budget, near-duplicates, recency, session) on the hash
embedder."""
from __future__ import annotations

import json

import pytest

from memory import Policy, budget_for
from memory.relevance import DEFAULT_SET, LabelledStore, calibrate, table
from memory.retrieval import RELEVANCE_MIN, RELEVANCE_MIN_CHUNK

ANY = Policy(min_score=-2.0)      # the hash embedder is not calibrated: thresholds are explicit


def _turn(mem, title, user, reply):
    s = mem.new_session("assistant", title)
    mem.add_message(s.id, "user", user)
    mem.add_message(s.id, "assistant", reply)
    return s


def test_a_threshold_keeps_unrelated_notes_out(mem):
    _turn(mem, "Dragon story", "Tell me about the dragon Erebo", "Erebo built a castle of black stone.")
    assert mem.context_for("What is the capital of France?", policy=ANY)          # before: sent anyway
    assert mem.context_for("What is the capital of France?", policy=Policy(min_score=0.3)) == []
    items = mem.context_for("What did the dragon Erebo build?", policy=Policy(min_score=0.3))
    assert [it.title for it in items] == ["Dragon story"]


def test_the_budget_grows_with_the_question_up_to_its_cap():
    assert budget_for(7, 384) == 64                 # a short question: a note or two
    assert budget_for(20, 384) == 160
    assert budget_for(500, 384) == 384
    assert budget_for(7, 0) == 0                    # a cap of 0 sends nothing


def test_near_duplicates_are_sent_once(mem):
    _turn(mem, "a", "How do I reverse a list in Python?", "Use lst[::-1] or lst.reverse().")
    _turn(mem, "b", "How do I reverse a list in Python please?", "Use lst[::-1] or lst.reverse().")
    _turn(mem, "c", "How do I sort a list in Python?", "Use sorted(lst) or lst.sort().")
    items = mem.context_for("reverse a list in Python", k=4, kinds=("message",), policy=ANY)
    texts = [it.text for it in items]
    assert len(items) == 2 and sum("reverse" in t for t in texts) == 1
    legacy = mem.context_for("reverse a list in Python", k=4, kinds=("message",), policy=Policy.legacy())
    assert len(legacy) == 3                          # the repeat is only dropped by the new policy


def test_recent_notes_rank_first_among_equally_relevant_ones(mem):
    old = _turn(mem, "old", "cats purr loudly at night", "They do.")
    new = _turn(mem, "new", "cats purr loudly at dawn", "They do.")
    month = 30 * 86400
    with mem.store.write() as c:
        c.execute("UPDATE messages SET created = created - ? WHERE session_id = ?", (month, old.id))
    items = mem.context_for("cats purr loudly", k=1, kinds=("message",), policy=ANY)
    assert items[0].session_id == new.id
    # a bonus orders what is relevant; it never makes an item relevant
    assert mem.context_for("cats purr loudly", kinds=("message",), policy=Policy(min_score=0.99)) == []


def test_documents_of_the_same_session_rank_first(mem, tmp_path):
    here = mem.new_session("assistant", "here")
    (tmp_path / "a.md").write_text("The red kettle boils water in two minutes.")
    (tmp_path / "b.md").write_text("The blue kettle boils water in two minutes.")
    mem.add_document(tmp_path / "b.md", session_id=here.id)
    mem.add_document(tmp_path / "a.md")                  # newer: first for any other session
    assert mem.context_for("kettle boils water", k=1, kinds=("chunk",), policy=ANY)[0].title == "a.md"
    items = mem.context_for("kettle boils water", k=1, kinds=("chunk",), session_id=here.id, policy=ANY)
    assert items[0].title == "b.md"


@pytest.mark.slow
def test_precision_of_what_is_sent_on_the_labelled_set(tmp_path):
    """The table of docs/memory.md: the k nearest (before) against the calibrated policy (after)."""
    data = json.loads(DEFAULT_SET.read_text(encoding="utf-8"))
    assert len(data["queries"]) * len(data["notes"]) >= 1000
    store = LabelledStore(data, tmp_path)
    try:
        result = table(store, (RELEVANCE_MIN, RELEVANCE_MIN_CHUNK))
        rows = result["rows"]
        before, after, held = rows["before (all)"], rows["after (all)"], rows["after (held-out half)"]
        assert before.precision < 0.3 and before.clean == 0        # everything sent, always
        assert after.precision >= 0.9 and after.recall >= 0.8
        assert held.precision >= 0.85 and held.recall >= 0.75
        assert after.clean >= after.empty_queries - 2              # mostly nothing when nothing helps
        assert after.tokens < before.tokens / 3
        # the shipped thresholds are the calibration half's choice
        turn, passage = calibrate(store, data["queries"][0::2])
        assert abs(turn - RELEVANCE_MIN) <= 0.04 and abs(passage - RELEVANCE_MIN_CHUNK) <= 0.02
    finally:
        store.close()
