"""Retrieval: context for a query and drafting sources, on a real chromadb. The quality of the
ranking is checked with the real MiniLM (slow); the rules around it (turns, budgets, filters,
duplicates) with the hash embedder."""
from __future__ import annotations

import pytest

from memory.chunking import chunk_text, estimate_tokenizer

DISTRACTORS = [
    "The stock market closed higher on Tuesday as technology shares rallied.",
    "Photosynthesis converts sunlight, water and carbon dioxide into glucose.",
    "The football team won the championship after a dramatic penalty shootout.",
    "Medieval castles were built with thick stone walls and deep moats.",
    "Jazz music originated in New Orleans in the early twentieth century.",
    "The recipe needs butter, sugar, and three eggs beaten until fluffy.",
]
NEEDLE = ("To reset the Zephyr X2 router, hold the recessed pinhole button on the back for "
          "thirty seconds until the status light blinks amber.")


@pytest.mark.slow
def test_context_finds_right_chunk_among_distractors(real_mem, tmp_path):
    mem = real_mem
    paras = []
    for i in range(6):
        paras += [f"{d} (section {i})" for d in DISTRACTORS]
    paras.insert(17, NEEDLE)
    p = tmp_path / "manual.md"
    p.write_text("\n\n".join(paras))
    mem.chunk_tokens = 60  # small chunks so distractor chunks surround the needle
    doc = mem.add_document(p)
    assert doc.chunks >= 6
    items = mem.context_for("How do I factory reset my Zephyr router?", k=3, token_budget=400)
    assert items and items[0].kind == "chunk"
    assert "pinhole button" in items[0].text
    assert items[0].source.startswith("manual.md #")
    assert items[0].score > items[-1].score or len(items) == 1
    assert sum(it.tokens for it in items) <= 400


def _two_conversations(mem):
    s1 = mem.new_session("assistant", "travel")
    mem.add_message(s1.id, "user", "What is the best time to visit Kyoto for cherry blossoms?")
    mem.add_message(s1.id, "assistant", "Late March to early April is peak sakura season.")
    s2 = mem.new_session("assistant", "code")
    mem.add_message(s2.id, "user", "How do I reverse a list in Python?")
    mem.add_message(s2.id, "assistant", "Use lst[::-1] or lst.reverse().")
    return s1, s2


@pytest.mark.slow
def test_context_turns_by_meaning(real_mem):
    mem = real_mem
    s1, s2 = _two_conversations(mem)
    items = mem.context_for("When do the cherry trees bloom in Japan?", k=2,
                            kinds=("message",))
    assert items[0].source == f"session {s1.id}" and "sakura" in items[0].text


def test_context_turns_budget_and_session_filter(mem):
    s1, s2 = _two_conversations(mem)
    items = mem.context_for("best time to visit Kyoto", k=2, kinds=("message",))
    assert items[0].kind == "message" and items[0].source == f"session {s1.id}"
    assert items[0].text == ("User: What is the best time to visit Kyoto for cherry blossoms?\n"
                             "Assistant: Late March to early April is peak sakura season.")
    assert len(items) == 2 and items[0].score > items[1].score  # one item per turn
    # the current session's own messages are left out
    items = mem.context_for("cherry blossoms Kyoto", k=4, session_id=s1.id, kinds=("message",))
    assert [it.source for it in items] == [f"session {s2.id}"]
    # budget: everything returned fits, and a tiny budget cuts the text
    items = mem.context_for("cherry blossoms Kyoto", k=4, token_budget=6)
    assert len(items) == 1 and items[0].tokens <= 6 and items[0].text.endswith(" …")
    assert mem.context_for("   ") == [] and mem.context_for("Kyoto", k=0) == []


@pytest.mark.slow
def test_drafting_sources_ranked_by_similarity(real_mem):
    mem = real_mem
    pairs = [
        ("Summarize the quarterly earnings report for Acme Corp.", [101, 102, 103, 104]),
        ("Translate 'good morning' into Spanish.", [201, 202]),
        ("Open the settings app and enable wifi.", [301, 302, 303]),
        ("Write a haiku about autumn leaves.", [401, 402, 403]),
    ]
    for i, (q, ids) in enumerate(pairs):
        s = mem.new_session("ui_agent" if "wifi" in q else "assistant")
        mem.add_message(s.id, "user", q)
        mem.add_message(s.id, "assistant", f"answer {i}", token_ids=ids)
    out = mem.drafting_sources("Please summarize Acme's quarterly earnings.", max_count=3)
    assert out[0] == [101, 102, 103, 104] and len(out) == 3
    out = mem.drafting_sources("Go to settings and turn on wifi", max_count=4)
    assert out[0] == [301, 302, 303]
    # bounded in count and tokens; the last one may be cut
    out = mem.drafting_sources("Translate good night into Spanish", max_count=8, max_tokens=5)
    assert out[0] == [201, 202] and sum(map(len, out)) <= 5
    assert len(mem.drafting_sources("anything", max_count=1)) == 1
    # mode filter
    assert mem.drafting_sources("summarize the earnings", mode="ui_agent") == [[301, 302, 303]]
    # user messages without token ids are not drafting sources
    s = mem.new_session("assistant")
    mem.add_message(s.id, "user", "Summarize the quarterly earnings report for Acme Corp.")
    assert all(out for out in mem.drafting_sources("earnings report"))


def test_drafting_sources_rules(mem):
    s = mem.new_session("assistant")
    for question, ids in [("tell me a joke about cats", [1, 2, 3]),
                          ("tell me a joke about dogs", [1, 2, 3]),  # the same reply: one source
                          ("tell me a joke about owls", [4, 5])]:
        mem.add_message(s.id, "user", question)
        mem.add_message(s.id, "assistant", "...", token_ids=ids)
    mem.add_message(s.id, "user", "tell me a joke about cats")  # no token ids: not a source
    assert mem.drafting_sources("a joke about cats") == [[1, 2, 3], [4, 5]]
    assert mem.drafting_sources("a joke about cats", max_tokens=4) == [[1, 2, 3], [4]]
    assert mem.drafting_sources("a joke about owls", max_count=1) == [[4, 5]]
    assert mem.drafting_sources("a joke", mode="ui_agent") == []
    assert mem.drafting_sources("") == []


def test_chunking_by_tokens_with_overlap():
    text = " ".join(f"word{i}" for i in range(2000)) + ".\n" + "Short sentence. " * 50
    chunks = chunk_text(text, chunk_tokens=64, overlap=16)
    assert all(text[c.start:c.end] == c.text for c in chunks)
    assert all(c.tokens <= 64 for c in chunks)
    # consecutive chunks overlap, and together they cover the text
    assert all(b.start < a.end for a, b in zip(chunks, chunks[1:]))
    assert chunks[0].start == 0 and chunks[-1].end >= len(text.rstrip())
    counted = [len(estimate_tokenizer(c.text)) for c in chunks]
    assert counted == [c.tokens for c in chunks]
    # a custom tokenizer drives the sizes
    chars = chunk_text("abcdefghij" * 50, tokenizer=lambda s: list(s.encode()), chunk_tokens=100,
                       overlap=0)
    assert all(len(c.text) <= 100 for c in chars) and "".join(c.text for c in chars) == "abcdefghij" * 50
