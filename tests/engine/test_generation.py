"""The generation loop on a scripted runtime (fast): every method's stops, cancel at any point of
prefill, the max_new_tokens cap, and the events' bookkeeping."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from engine import Done, Notice, Prefill, Step, Text
from engine.events import SOURCES
from engine.decoding.generation import Output
from engine.methods import METHODS
from support.scripted_backend import EOS, Tokenizer, chain_prompt, scripted_engine

SPECULATIVE = [m for m in METHODS if m != "vanilla"]
# 9 -> 10 -> ... -> 16 -> EOS: after a prompt ending in 9, the answer is 10..16 (7 tokens)
ENDING = {t: t + 1 for t in range(9, 16)} | {16: EOS}


def run(engine, ids, **kw) -> tuple[list, Done]:
    events = list(engine.generate(ids, **kw))
    assert sum(isinstance(e, Done) for e in events) == 1 and isinstance(events[-1], Done)
    return events, events[-1]


def ending_prompt() -> list[int]:
    """The ending appears in the prompt, then the prompt stops at 9: context drafting proposes the
    whole ending (EOS included) in one step."""
    return chain_prompt(30, 20) + list(range(9, 17)) + [EOS, 20, 21] + chain_prompt(40, 10)[-5:] + [9]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("at_chunk", ["first", "last"])
def test_cancel_during_prefill_ends_cleanly_with_no_token(method, at_chunk):
    """Cancelled from a Prefill event (as Esc during a long summary's prefill does): no token is
    sampled from part of the prompt, no speculator starts on a partial top-k view, one Done."""
    engine = scripted_engine()
    ids = chain_prompt(7, 600)
    cancel = threading.Event()
    events = []
    for ev in engine.generate(ids, method=method, max_new_tokens=16, chunk_size=64, cancel=cancel):
        events.append(ev)
        if isinstance(ev, Prefill) and (at_chunk == "first" or ev.done == ev.total):
            cancel.set()
    done = events[-1]
    assert isinstance(done, Done) and sum(isinstance(e, Done) for e in events) == 1
    assert done.stop_reason == "cancelled" and done.new_tokens == 0 and done.token_ids == ()
    assert not [e for e in events if isinstance(e, (Text, Step, Notice))]
    prefill = [e for e in events if isinstance(e, Prefill)]
    assert len(prefill) == (1 if at_chunk == "first" else 10)       # stopped before the next chunk
    assert engine.model.prefills == 0                                 # end_prefill ran


def test_cancel_before_start_and_closing_mid_prefill():
    engine = scripted_engine()
    cancel = threading.Event()
    cancel.set()
    events, done = run(engine, chain_prompt(7, 300), method="hexa", chunk_size=64, cancel=cancel)
    assert done.stop_reason == "cancelled" and done.new_tokens == 0
    assert not [e for e in events if isinstance(e, Prefill)] and engine.model.fed == []
    stream = engine.generate(chain_prompt(7, 300), method="hexa", chunk_size=64)
    assert isinstance(next(stream), Prefill)
    stream.close()                                                    # the consumer went away
    assert engine.model.prefills == 0


@pytest.mark.parametrize("max_new", range(1, 12))
def test_no_method_emits_more_than_max_new_tokens(max_new):
    """A step that accepts past the cap *and* reaches EOS (sam: 'returned 133 tokens for
    --max-new-tokens 128') is cut at the cap, and every method stops as plain decoding does."""
    engine = scripted_engine(ENDING)
    ids = ending_prompt()
    _, ref = run(engine, ids, method="vanilla", max_new_tokens=max_new)
    assert ref.new_tokens == min(max_new, 7)
    assert ref.stop_reason == ("max_tokens" if max_new <= 7 else "eos")
    for method in SPECULATIVE:
        events, done = run(engine, ids, method=method, max_new_tokens=max_new)
        assert done.new_tokens <= max_new, (method, done.new_tokens)
        assert (done.token_ids, done.stop_reason) == (ref.token_ids, ref.stop_reason), method
        assert "".join(e.delta for e in events if isinstance(e, Text)) == done.text


def test_the_whole_ending_is_accepted_in_one_step():
    """The cap test above exercises what it means to: a step that crosses the cap and holds EOS."""
    engine = scripted_engine(ENDING)
    events, done = run(engine, ending_prompt(), method="sam", max_new_tokens=64)
    steps = [e for e in events if isinstance(e, Step)]
    assert done.stop_reason == "eos" and done.token_ids == tuple(range(10, 17))
    assert len(steps) == 1 and steps[0].accepted >= 8


def test_output_stops_at_the_cap_before_an_eos_further_on():
    out = Output(Tokenizer(), (), {EOS}, max_new=4)
    assert out.add([10, 11]) == (" t10 t11", "")
    assert out.add([12, 13, 14, EOS, 15]) == (" t12 t13", "max_tokens")
    assert out.ids == [10, 11, 12, 13]
    out = Output(Tokenizer(), (), {EOS}, max_new=4)
    assert out.add([10, 11, EOS, 12]) == (" t10 t11", "eos") and out.ids == [10, 11]
    out = Output(Tokenizer(), ("t12",), {EOS}, max_new=9)
    delta, reason = out.add([10, 11, 12, 13])
    assert reason == "stop_string" and "t12" not in out.stream.text


@pytest.mark.parametrize("method", METHODS)
def test_greedy_methods_equal_plain_decoding_and_events_add_up(method):
    engine = scripted_engine()
    ids = chain_prompt(7, 300)
    _, ref = run(engine, ids, method="vanilla", max_new_tokens=40, chunk_size=64)
    events, done = run(engine, ids, method=method, max_new_tokens=40, chunk_size=64)
    assert done.token_ids == ref.token_ids and done.stop_reason == "max_tokens"
    prefill = [e for e in events if isinstance(e, Prefill)]
    assert [p.chunk for p in prefill] == [64] * 4 + [300 - 4 * 64]
    assert all(p.graph == "scripted:dynamic" and p.total_blocks == 0 for p in prefill)
    steps = [e for e in events if isinstance(e, Step)]
    assert done.steps == len(steps) and sum(s.accepted for s in steps) + 1 >= done.new_tokens
    for s in steps:
        assert len(s.sources) == s.accepted and s.sources[-1] == "model" and set(s.sources) <= set(SOURCES)
        assert s.proposed == s.tree_size and 0 <= s.accepted - 1 <= s.proposed
    assert done.accepted_by_source == {k: sum(s.sources.count(k) for s in steps) for k in done.accepted_by_source}
    if method != "vanilla":            # the prompt is the walk the model follows: drafts land
        assert done.steps < ref.steps and done.mean_accepted > 2
    assert "".join(e.delta for e in events if isinstance(e, Text)) == done.text


def test_sampling_is_seeded_and_differs_from_greedy():
    engine = scripted_engine(margin=1.0)          # a soft model: sampling has choices to make
    ids = chain_prompt(7, 100)
    greedy = run(engine, ids, max_new_tokens=12)[1].token_ids
    sampled = {}
    for seed in range(4):
        a = run(engine, ids, max_new_tokens=12, temperature=1.0, seed=seed)[1]
        b = run(engine, ids, max_new_tokens=12, temperature=1.0, seed=seed, method="hexa")[1]
        assert a.token_ids == run(engine, ids, max_new_tokens=12, temperature=1.0, seed=seed)[1].token_ids
        # the cap, or EOS before it (a soft model gives EOS some probability at every step)
        assert all(len(d.token_ids) == 12 or d.stop_reason == "eos" for d in (a, b))
        sampled[seed] = a.token_ids
    assert len(set(sampled.values())) > 1                 # the seed matters
    assert any(s != greedy for s in sampled.values())     # and sampling is not greedy decoding


def test_calibrating_methods_get_the_whole_prompts_top_k_view(monkeypatch):
    from engine.methods import METHOD_SPECS
    from engine.decoding.speculative import DraftingSpeculator

    seen = {}
    start = DraftingSpeculator.start

    def spy(self, prompt_ids, first_token, topk):
        seen[self.spec] = (len(prompt_ids), None if topk is None else tuple(topk[0].shape))
        return start(self, prompt_ids, first_token, topk)
    monkeypatch.setattr(DraftingSpeculator, "start", spy)
    engine = scripted_engine()
    ids = chain_prompt(7, 300)
    for method in ("hexa", "hexa-fill", "hexa-nocal", "sam"):
        run(engine, ids, method=method, max_new_tokens=4, chunk_size=64)
    hexa, fill, nocal, sam = (METHOD_SPECS[m] for m in ("hexa", "hexa-fill", "hexa-nocal", "sam"))
    assert seen[hexa] == seen[fill] == (300, (300, 4))
    assert seen[nocal] == seen[sam] == (300, None)


def test_topk_view_holds_vocabulary_ids():
    from engine.decoding.calibration_policy import DEFAULT, TopKView

    engine = scripted_engine()
    ids = [50, 51, 3]
    view = TopKView(engine.model, ids, DEFAULT)
    view.add(np.eye(64, dtype=np.float32)[ids])
    top_ids, top_p = view.result()
    assert top_ids.shape == top_p.shape == (3, 4)
    # a 64-token vocabulary is ranked whole: the best guess is the model's own next token
    logits = engine.model.logits(np.eye(64, dtype=np.float32)[ids])
    assert top_ids[:, 0].tolist() == logits.argmax(-1).tolist()
