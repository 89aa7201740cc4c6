"""Prefix KV reuse across requests: a prompt that starts like a recent one prefills only the rest,
and gives exactly the tokens of a cold run (chat turns, the same prompt again, after a cancelled
prefill); the store itself keeps the most recently used prompts within its token budget."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from engine import Done, Prefill
from engine.runtime.kv_cache import KVCache
from engine.decoding.prefix_cache import MIN_REUSE, PrefixStore

TURNS = ["In three sentences, explain what a lighthouse does and why ships need one.",
         "Now name two famous lighthouses.",
         "Which of the two is older?"]
MAX_NEW = 20


def run(engine, ids, **kw) -> tuple[list[Prefill], Done]:
    events = list(engine.generate(ids, max_new_tokens=kw.pop("max_new_tokens", MAX_NEW), **kw))
    assert isinstance(events[-1], Done)
    return [e for e in events if isinstance(e, Prefill)], events[-1]


@pytest.fixture(autouse=True)
def no_kept_prefixes(request):
    """Every test starts (and leaves the session's engine) with nothing kept."""
    if "engine" not in request.fixturenames:
        yield
        return
    engine = request.getfixturevalue("engine")
    engine.forget_prefixes()
    yield
    engine.forget_prefixes()


def chat(engine, method: str, warm: bool) -> list[tuple[list[int], list[Prefill], Done]]:
    """The conversation of TURNS, each prompt = the earlier messages + the answers + the new turn."""
    messages, turns = [], []
    for user in TURNS:
        messages.append({"role": "user", "content": user})
        ids = engine.chat_ids(messages)
        if not warm:
            engine.forget_prefixes()
        prefill, done = run(engine, ids, method=method, keep_answer=True)   # as the assistant asks
        turns.append((ids, prefill, done))
        messages.append({"role": "assistant", "content": done.text})
    return turns


@pytest.mark.parametrize("method", ["vanilla", "hexa", "sam"])
def test_a_warm_chat_gives_the_cold_chats_tokens(engine, method):
    cold = chat(engine, method, warm=False)
    engine.forget_prefixes()
    warm = chat(engine, method, warm=True)
    for turn, ((ids, _, c), (warm_ids, prefill, w)) in enumerate(zip(cold, warm)):
        assert warm_ids == ids and w.token_ids == c.token_ids, (method, turn)
        assert c.reused_tokens == 0
        if turn == 0:
            assert w.reused_tokens == 0 and all(p.reused == 0 for p in prefill)
            continue
        before = warm[turn - 1][0]
        assert ids[:len(before)] == before           # the chat template keeps earlier turns as they were
        # the previous prompt and its answer, kept after the previous Done (as far as the chat
        # template's re-tokenized answer equals the generated ids)
        assert len(before) < w.reused_tokens < len(ids)
        first = prefill[0]
        assert first.reused == w.reused_tokens and first.done == first.reused + first.chunk
        assert prefill[-1].done == prefill[-1].total == len(ids) == w.prompt_tokens
        assert sum(p.chunk for p in prefill) == len(ids) - w.reused_tokens


def test_the_same_prompt_twice_feeds_only_its_last_token(engine):
    ids = engine.chat_ids([{"role": "user", "content": TURNS[0]}])
    _, cold = run(engine, ids, method="hexa")
    prefill, warm = run(engine, ids, method="hexa")
    assert warm.reused_tokens == len(ids) - 1 and warm.token_ids == cold.token_ids
    assert [(p.done, p.chunk, p.reused) for p in prefill] == [(len(ids), 1, len(ids) - 1)]
    assert len(engine.prefixes) == 1                 # refreshed, not kept twice


def test_reuse_false_prefills_everything(engine):
    ids = engine.chat_ids([{"role": "user", "content": TURNS[0]}])
    run(engine, ids, max_new_tokens=2)
    prefill, done = run(engine, ids, max_new_tokens=2, reuse=False)
    assert done.reused_tokens == 0 and sum(p.chunk for p in prefill) == len(ids)


def test_a_cancelled_prefill_keeps_nothing_and_the_next_request_is_cold_identical(engine):
    first = [{"role": "user", "content": TURNS[0]}]
    run(engine, engine.chat_ids(first), method="hexa", max_new_tokens=4)  # kept: turn 1's prompt
    ids = engine.chat_ids(first + [{"role": "assistant", "content": "Lighthouses guide ships. " * 20},
                                   {"role": "user", "content": TURNS[1]}])
    kept = len(engine.chat_ids(first))
    cancel = threading.Event()
    seen = []
    for ev in engine.generate(ids, method="hexa", max_new_tokens=MAX_NEW, chunk_size=16, cancel=cancel):
        seen.append(ev)
        if isinstance(ev, Prefill):
            cancel.set()
    assert seen[-1].stop_reason == "cancelled" and seen[-1].new_tokens == 0
    assert [e.done for e in seen if isinstance(e, Prefill)] == [kept + 16]   # stopped after one chunk
    assert len(engine.prefixes) == 1 and engine.prefixes.lookup(ids)[1] == kept
    _, warm = run(engine, ids, method="hexa", chunk_size=16)
    assert warm.reused_tokens == kept
    engine.forget_prefixes()
    _, cold = run(engine, ids, method="hexa", chunk_size=16)
    assert warm.token_ids == cold.token_ids and cold.reused_tokens == 0


def test_a_long_first_turn_makes_the_second_turns_first_token_faster(engine, dev_cases):
    document = (dev_cases[0]["turns"][0] * 3)[:2500]   # the built-in case (no dev set beside a clone) is short
    messages = [{"role": "user", "content": "Summarize this article:\n" + document}]
    cold_prefill, first = run(engine, engine.chat_ids(messages), method="vanilla", max_new_tokens=8,
                              keep_answer=True)
    messages += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "Shorter."}]
    ids = engine.chat_ids(messages)
    warm_prefill, warm = run(engine, ids, method="vanilla", max_new_tokens=8)
    engine.forget_prefixes()
    _, cold = run(engine, ids, method="vanilla", max_new_tokens=8)
    assert warm.token_ids == cold.token_ids
    fed = sum(p.chunk for p in warm_prefill)
    assert warm.reused_tokens > first.prompt_tokens >= 400 and fed == len(ids) - warm.reused_tokens < 64
    # ~10x fewer tokens fed; a generous bound for a busy 2-core machine
    assert warm.ttft_ms < 0.6 * cold.ttft_ms, (warm.ttft_ms, cold.ttft_ms)


# ---- the store alone ----------------------------------------------------------------------------
def filled_cache(n: int, seed: int) -> KVCache:
    cache = KVCache(layers=2, kv_heads=1, head_dim=4, capacity=n + 8)
    g = np.random.default_rng(seed)
    cache.k[:, :, :n] = g.standard_normal((2, 1, n, 4), dtype=np.float32)
    cache.v[:, :, :n] = g.standard_normal((2, 1, n, 4), dtype=np.float32)
    cache.length = n
    return cache


def test_store_evicts_the_least_recently_used_past_its_budget():
    store = PrefixStore(budget_tokens=100)
    a, b, c = ([k] * 40 for k in (1, 2, 3))
    store.put(a, filled_cache(40, 1))
    store.put(b, filled_cache(40, 2))
    assert store.lookup(a + [9])[1] == 40             # a is now the most recently used
    store.put(c, filled_cache(40, 3))                 # 120 > 100 tokens: b goes
    assert store.tokens == 80 and len(store) == 2
    assert store.lookup(b + [9]) == (None, 0)
    assert store.lookup(a + [9])[1] == store.lookup(c + [9])[1] == 40
    store.put(list(range(200)), filled_cache(200, 4))  # over the whole budget: not kept
    assert store.tokens == 80
    store.clear()
    assert len(store) == 0 and store.lookup(a + [9]) == (None, 0)


def test_store_lookup_rules_and_restore():
    store = PrefixStore(budget_tokens=1000)
    ids = list(range(100, 140))
    cache = filled_cache(40, 5)
    store.put(ids, cache)
    entry, n = store.lookup(ids)
    assert n == 39                                    # the last prompt token is always fed
    entry, n = store.lookup(ids[:30] + [7, 8, 9])
    assert n == 30
    fresh = KVCache(2, 1, 4, 64)
    entry.restore(fresh, n)
    assert fresh.length == 30 and np.array_equal(fresh.k[:, :, :30], cache.k[:, :, :30])
    assert np.array_equal(fresh.v[:, :, :30], cache.v[:, :, :30]) and not fresh.k[:, :, 30:].any()
    assert store.lookup(ids[:MIN_REUSE - 1] + [7, 8]) == (None, 0)    # too short to be worth it
    assert store.lookup(ids + [1], view_key=(4, 4096)) == (None, 0)   # no view rows kept for it
    cache.k += 1.0                                    # the kept rows are a copy
    assert not np.array_equal(entry.k, cache.k[:, :, :40])


def test_store_keeps_one_entry_per_conversation_and_its_view_rows():
    store = PrefixStore(budget_tokens=1000)
    turn1, turn2 = list(range(50)), list(range(50)) + [7] * 30
    view = (np.arange(80 * 4).reshape(80, 4), np.random.default_rng(0).random((80, 4), dtype=np.float32))
    store.put(turn1, filled_cache(50, 6), (view[0][:50], view[1][:50]), (4, 4096))
    store.put(turn2, filled_cache(80, 7), view, (4, 4096))
    assert len(store) == 1 and store.tokens == 80      # turn 2 covers turn 1
    store.put(turn1, filled_cache(50, 8))               # covered already (a view is not needed)
    assert len(store) == 1
    entry, n = store.lookup(turn2 + [1], view_key=(4, 4096))
    assert n == 80 and np.array_equal(entry.view_head(n)[0], view[0])
    assert store.lookup(turn2 + [1], view_key=(8, 0)) == (None, 0)   # rows made another way


def test_a_one_shot_request_keeps_its_prompt_only(engine):
    """Without keep_answer (the summarizer's parts, the agent's steps, the bench) the answer is not
    prefilled again: only the prompt is kept."""
    engine.forget_prefixes()
    ids = engine.chat_ids([{"role": "user", "content": TURNS[0]}])
    run(engine, ids, max_new_tokens=8)
    assert [len(e.ids) for e in engine.prefixes._entries.values()] == [len(ids)]
    engine.forget_prefixes()
    _, done = run(engine, ids, max_new_tokens=8, keep_answer=True)
    assert [len(e.ids) for e in engine.prefixes._entries.values()] == [len(ids) + done.new_tokens]
