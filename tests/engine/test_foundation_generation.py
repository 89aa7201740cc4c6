"""Generation through the engine facade: events, stop conditions, cancel, over-long prompts."""
from __future__ import annotations

import threading

import pytest

from engine import Done, Engine, EngineError, Notice, Prefill, Step, Text

PROMPT = "List five facts about the planet Mars, one per line."


def run(engine, prompt=PROMPT, **kw):
    events = list(engine.generate(prompt, **kw))
    done = events[-1]
    assert isinstance(done, Done) and sum(isinstance(e, Done) for e in events) == 1
    return events, done


def test_events_stream_in_order_and_text_adds_up(engine):
    events, done = run(engine, max_new_tokens=24, chunk_size=16)
    prefill = [e for e in events if isinstance(e, Prefill)]
    assert prefill and prefill[-1].done == prefill[-1].total == done.prompt_tokens
    assert [p.chunk for p in prefill[:-1]] == [16] * (len(prefill) - 1)   # chunked as asked
    assert "".join(e.delta for e in events if isinstance(e, Text)) == done.text
    steps = [e for e in events if isinstance(e, Step)]
    assert len(steps) == done.steps and done.new_tokens == len(done.token_ids)
    times = [e.t for e in events]
    assert times == sorted(times)
    assert done.ttft_ms > 0 and done.decode_tok_s > 0 and done.prefill_tok_s > 0


def test_chunk_size_does_not_change_the_output(engine):
    """Cold runs (no kept prefix): every prefill row is computed alone, so the chunking cannot
    change a bit of the prompt's KV."""
    _, a = run(engine, max_new_tokens=16, chunk_size=7, reuse=False)
    _, b = run(engine, max_new_tokens=16, chunk_size=512, reuse=False)
    assert a.token_ids == b.token_ids


def test_stop_on_max_tokens(engine):
    _, done = run(engine, max_new_tokens=5)
    assert done.stop_reason == "max_tokens" and done.new_tokens == 5


def test_stop_on_eos(engine):
    _, done = run(engine, "Reply with just the word yes.", max_new_tokens=64)
    assert done.stop_reason == "eos" and done.new_tokens < 64
    assert "<|im_end|>" not in done.text


def test_stop_string_cuts_the_text(engine):
    _, free = run(engine, max_new_tokens=40)
    words = free.text.split()
    stop = words[len(words) // 2]
    events, done = run(engine, max_new_tokens=40, stop=[stop])
    assert done.stop_reason == "stop_string"
    assert stop not in done.text and free.text.startswith(done.text)
    assert "".join(e.delta for e in events if isinstance(e, Text)) == done.text


def test_cancel_from_another_thread(engine):
    cancel = threading.Event()
    got = []
    for ev in engine.generate(PROMPT, max_new_tokens=200, cancel=cancel):
        got.append(ev)
        if isinstance(ev, Text) and not cancel.is_set():
            threading.Thread(target=cancel.set).start()
    done = got[-1]
    assert done.stop_reason == "cancelled" and done.new_tokens < 10


def test_cancel_before_start_yields_done(engine):
    cancel = threading.Event()
    cancel.set()
    _, done = run(engine, max_new_tokens=20, cancel=cancel)
    assert done.stop_reason == "cancelled" and done.new_tokens == 0


def test_sampling_is_seeded(engine):
    runs = {seed: run(engine, max_new_tokens=12, temperature=1.0, top_p=0.95, seed=seed)[1] for seed in (7, 8, 9)}
    again = run(engine, max_new_tokens=12, temperature=1.0, top_p=0.95, seed=7)[1]
    assert again.token_ids == runs[7].token_ids
    # the seed matters (so at least one sampled answer is not the greedy one)
    assert len({d.token_ids for d in runs.values()}) > 1


def test_cancel_during_a_long_prefill_for_every_method(engine):
    """Esc during a summary's prefill: cancel set from the first chunk's Prefill event stops the
    prefill there, with no token and no error, whatever the method."""
    from engine.methods import METHODS

    text = "Summarize this report. " + " ".join(f"Section {i} says the figures rose by {i} percent." for i in range(60))
    for method in METHODS:
        cancel = threading.Event()
        events = []
        for ev in engine.generate(text, method=method, max_new_tokens=32, chunk_size=128, cancel=cancel):
            events.append(ev)
            if isinstance(ev, Prefill):
                cancel.set()
        done = events[-1]
        prefill = [e for e in events if isinstance(e, Prefill)]
        assert isinstance(done, Done) and sum(isinstance(e, Done) for e in events) == 1, method
        assert done.stop_reason == "cancelled" and done.new_tokens == 0, (method, done.stop_reason)
        assert len(prefill) == 1 and prefill[0].total > 3 * 128, method
        assert not [e for e in events if isinstance(e, (Text, Step))]


def test_over_long_prompt_is_cut_with_a_notice(engine):
    small = Engine(engine.model, engine.tokenizer, engine.folder, engine.model_name, engine.backend_name,
                   engine.threads, context_window=256, load_seconds=0)
    long_prompt = "Repeat after me. " + " ".join(f"item{i}" for i in range(600))
    events, done = run(small, long_prompt, max_new_tokens=32)
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and "exceeds the context window" in notices[0].message
    assert done.prompt_tokens + 32 <= 256 and done.new_tokens > 0


@pytest.mark.parametrize("kw", [{"max_new_tokens": 0}, {"temperature": -1}, {"top_p": 0},
                                {"method": "warp-drive"}])
def test_bad_arguments_are_user_errors(engine, kw):
    with pytest.raises(EngineError):
        next(iter(engine.generate(PROMPT, **kw)))


def test_empty_prompt_is_refused(engine):
    with pytest.raises(EngineError):
        engine.generate([])


@pytest.mark.parametrize("ids", [[1, 2, 49152], [1, -1], [1, "a"], [1, 2.5]])
def test_a_prompt_token_id_outside_the_vocabulary_is_one_line(engine, ids):
    """The kernels read the embedding row an id names unchecked (49152 read past SmolLM2's rows
    and answered): such a prompt is refused in one line."""
    assert engine.model.config.vocab_size == 49152
    with pytest.raises(EngineError) as info:
        engine.generate(ids, method="hexa")
    message = str(info.value)
    assert message.startswith(f"the prompt holds token id {ids[-1]!r}, outside the model's vocabulary of 49152")
    assert "\n" not in message


def test_sources_and_responses_of_another_vocabulary_draft_nothing(engine):
    """A stored reply of another model (ids past this one's rows) is left out of the drafting
    sources and of the history: the answer is the one without it, drafted from the rest."""
    prompt = engine.chat_ids([{"role": "user", "content": "Name three colours."}])
    plain = list(engine.generate(prompt, max_new_tokens=12, method="vanilla"))[-1].token_ids
    foreign = [list(plain[:6]) + [70000] + list(plain[6:])]
    before = engine.history.tokens
    engine.index_response(foreign[0])
    assert engine.history.tokens == before
    done = list(engine.generate(prompt, max_new_tokens=12, method="hexa", sources=foreign + [list(plain)]))[-1]
    assert done.token_ids == plain and done.accepted_by_source.get("model", 0) < len(plain)
