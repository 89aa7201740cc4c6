"""Constrained decoding: grammar -> token masks on the real SmolLM2 vocabulary (fast: the tokenizer
only), the masks/pruning/forced drafts in the generation loop on the scripted runtime, and with the
real model: constrained speculative decoding == constrained greedy, token for token, per method."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import numpy as np

from engine import Done, Step
from engine.decoding.grammar import DONE, CharGrammar, Constraint, Free, Grammar
from engine.events import DRAFT_SOURCES, SOURCES
from engine.methods import METHODS
from engine.model.vocab import VocabIndex
from engine.runtime.reference import softmax
from support.scripted_backend import EOS, BigramBackend, Tokenizer
from support.scripted_backend import FLAT_COST

SPECULATIVE = [m for m in METHODS if m != "vanilla"]
ACTIONS = Grammar([[f"tap({i})"] for i in range(1, 10)] + [["type(3, \"", Free(40), "\")"], ["back()"],
                                                           ["done(\"", Free(60), "\")"]])


# ---- grammar and token compilation on the real vocabulary -------------------------------------
@pytest.fixture(scope="module")
def vocab() -> VocabIndex:
    from engine.model.cache import ensure_cached
    from engine.model.source import resolve
    from engine.model.tokenizer import ChatTokenizer

    tok = ChatTokenizer(ensure_cached(resolve(None), Path(os.environ["HEXA_CACHE_DIR"]) / "models"))
    v = VocabIndex.from_tokenizer(tok, len(tok))
    v.tokenizer = tok
    return v


EOT = (2,)       # SmolLM2's <|im_end|>


def ids_of(v: VocabIndex, *texts: str) -> list[int]:
    out = []
    for t in texts:
        ids = [i for i, x in enumerate(v.texts) if x == t]
        assert len(ids) == 1, (t, ids)
        out += ids
    return out


def texts_allowed(c: Constraint, state) -> set:
    return {c.vocab.texts[i] or i for i in np.flatnonzero(c.allowed(state)).tolist()}


def reference_mask(c: Constraint, state) -> np.ndarray:
    """Brute force: every token's text walked through the character automaton."""
    m = np.zeros(c.vocab.vocab_size, dtype=np.bool_)
    for i, t in enumerate(c.vocab.texts):
        if t and c.chars.walk(state, t):
            m[i] = True
    if c.chars.final(state) or not m.any():
        m[list(c.eos)] = True
    return m


def test_grammar_validation_and_matching():
    with pytest.raises(ValueError, match="excluded"):
        Grammar([["say(", Free(5), ")"]])          # ')' could be free text: ambiguous end
    with pytest.raises(ValueError):
        Grammar([["a", Free(3), Free(3, exclude="x")]])
    with pytest.raises(ValueError):
        Grammar([])
    with pytest.raises(ValueError):
        Grammar([[Free(0)]])
    g = Grammar([["tap(1)"], ["type(3, \"", Free(5), "\")"], "back()"])
    assert g.matches("tap(1)") and g.matches('type(3, "hi")') and g.matches("back()")
    assert not g.matches("tap(1") and not g.matches('type(3, "")') and not g.matches('type(3, "toolong")')
    assert not g.matches('type(3, "a"b")') and not g.matches("tap(1)x")


def test_masks_equal_brute_force_on_every_state_kind(vocab):
    """Literals, shared prefixes, free text (start, middle, at its limit, exits spanning the
    closing literal), a Free first, text and literal continuing from one node."""
    g = Grammar([[f"tap({i})"] for i in range(1, 13)] + [["type(3, \"", Free(6), "\")"], [" scroll(down)"],
                ["done(\"", Free(100), "\")"], ["done(\"ok\")"], ["say: ", Free(10, exclude="\n.")],
                [Free(3, exclude="x"), "x, ", Free(5, exclude="\""), "\" end"]])
    c = Constraint(g, vocab, EOT)
    for prefix in ["", "tap(1", "tap(1)", 'type(3, "', 'type(3, "a', 'type(3, "abcdef', 'type(3, "ab"',
                   'done("', 'done("ok', "say: ", "say: 123456789", "ab", "abx, ", "abx, 12", ' scroll(']:
        state = c.chars.walk(c.start, prefix)
        assert state, prefix
        mask = c.allowed(state)
        assert np.array_equal(mask, reference_mask(c, state)), prefix
        # advance agrees with the mask, token by token
        for t in np.flatnonzero(mask).tolist()[:200]:
            assert c.advance(state, t) is not None
    start = c.allowed(c.start)
    assert not start[list(EOT)].any()


def test_literal_alternatives_and_shared_prefixes(vocab):
    c = Constraint(Grammar([["tap(1)"], ["tap(12)"], ["tap(2)"], ["back()"]]), vocab, EOT)
    first = texts_allowed(c, c.start)
    assert {"t", "ta", "b", "back"} <= first and " t" not in first and " back" not in first
    assert first <= {"t", "ta", "tap", "b", "ba", "bac", "back"}
    s = c.walk(c.start, vocab.tokenizer.encode("tap(1"))
    assert texts_allowed(c, s) == {")", "2"} | ({"2)"} if "2)" in vocab.texts else set())
    done = c.walk(s, ids_of(vocab, ")"))
    assert texts_allowed(c, done) == set(EOT)      # complete: end of turn only
    assert c.advance(done, EOT[0]) == DONE and c.complete(done)
    assert c.advance(s, EOT[0]) is None            # not before completion
    assert c.walk(c.start, vocab.tokenizer.encode("tap(3")) is None


def test_free_segments_and_segment_spanning_tokens(vocab):
    c = Constraint(ACTIONS, vocab, EOT)
    opened = c.walk(c.start, vocab.tokenizer.encode('type(3, "'))
    assert opened is not None
    allowed = texts_allowed(c, opened)
    assert {"Hello", " world", "hi"} <= allowed
    assert '")' not in allowed and '"' not in allowed   # free text has at least one character
    assert "\n" not in allowed and not (set(EOT) & allowed)
    written = c.walk(opened, ids_of(vocab, "Hello"))
    allowed = texts_allowed(c, written)
    assert {'")', '"', '."', ' "', " world"} <= allowed     # tokens closing the segment, spanning it
    assert not [t for t in allowed if isinstance(t, str) and ('"' in t and not t.endswith(('"', '")')))]
    closed = c.walk(written, ids_of(vocab, '")'))
    assert texts_allowed(c, closed) == set(EOT)
    # the limit: 40 characters, then only a closing quote
    full = c.walk(opened, vocab.tokenizer.encode("a" * 40))
    assert full is not None and all(isinstance(t, int) or t.startswith('"') for t in texts_allowed(c, full))
    assert c.walk(full, vocab.tokenizer.encode("a")) is None


def test_partial_utf8_tokens_are_never_allowed(vocab):
    partial = [i for i, t in enumerate(vocab.texts) if t is None and i > 100][:50]
    assert len(partial) == 50             # byte tokens holding part of a UTF-8 sequence
    c = Constraint(Grammar([["say \"", Free(20), "\""], ["café"]]), vocab, EOT)
    free = c.walk(c.start, vocab.tokenizer.encode('say "'))
    assert not c.allowed(free)[partial].any()
    assert not c.allowed(c.walk(c.start, ids_of(vocab, "ca", "f")))[partial].any()
    whole = [i for i, t in enumerate(vocab.texts) if t == "é"]
    assert whole and c.allowed(c.walk(c.start, ids_of(vocab, "ca", "f")))[whole].all()


def test_mask_cost_is_small(vocab):
    """The measured numbers of engine/decoding/grammar.py's docstring (not asserted: speed lives in
    benchmarks); the mask of a fresh state is computed once and then cached."""
    import time

    grammar = Grammar([[f"tap({i})"] for i in range(1, 57)] + [["type(3, \"", Free(60), "\")"], ["back()"],
                                                                ["done(\"", Free(100), "\")"], ["scroll(down)"]])
    c = Constraint(grammar, vocab, EOT)
    t0 = time.perf_counter()
    c.allowed(c.start)
    first_ms = (time.perf_counter() - t0) * 1000
    free = c.walk(c.start, vocab.tokenizer.encode('type(3, "Hel'))
    t0 = time.perf_counter()
    c.allowed(free)
    free_ms = (time.perf_counter() - t0) * 1000
    print(f"first-token mask over 60 alternatives {first_ms:.2f} ms, free-text mask {free_ms:.2f} ms")
    assert c.allowed(c.start) is c.allowed(c.start)


# ---- the generation loop on the scripted runtime ----------------------------------------------
# A character vocabulary for the bigram model: id -> text (2 is EOS).
TEXTS = {0: "t", 1: "a", 3: "p", 4: "(", 5: ")", 16: "tap(", 17: "tap(1", 18: '")', 19: '"', 20: " ",
         21: 'done("', 22: "x", 23: "y", 24: "z", 25: "back()", 26: "b", 27: "o", 28: "k", 29: "ok"}
# 63 is "c": every prefix of every grammar here can go on (after "b", "a", no dead end that would
# end a sampled answer early with the end-of-turn token, as ``Constraint`` allows there)
TEXTS |= {6 + d: str(d) for d in range(10)} | {i: f"w{i}" for i in range(30, 63)} | {63: "c"}
TAP = Grammar([[f"tap({i})"] for i in range(1, 10)] + [["back()"], ["done(\"", Free(8), "\")"]])


class CharTokenizer(Tokenizer):
    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return "".join(TEXTS.get(int(i), "") for i in ids)


def char_engine(script=None, **kw):
    from engine.engine import Engine

    engine = Engine(BigramBackend(script, **kw), CharTokenizer(), Path("scripted"), "scripted", "torch",
                    threads=1, context_window=2048, load_seconds=0.0)
    engine._cost = FLAT_COST
    return engine


def run(engine, ids, **kw) -> tuple[Done, list[Step]]:
    events = list(engine.generate(ids, **kw))
    return events[-1], [e for e in events if isinstance(e, Step)]


# the model wants "tap(12)" after 40: constrained to tap(1)..tap(9), it must write something else
WANTS_TAP12 = {40: 16, 16: 7, 7: 8, 8: 5, 5: EOS}
TAP12 = [16, 7, 8, 5, EOS]
VALID = [[16, 9, 5, EOS], [25, EOS], [21, 22, 23, 18, EOS], [0, 1, 3, 4, 12, 5, EOS]]


def scripted_prompts():
    base = [41, 42, 43] + TAP12 + [44] + VALID[0] + [45] + VALID[2] + [46]
    return [base + [40], base + [47], base + [16], [50, 51, 21, 22, 23, 24, 18, 52] + [40]]


def test_scripted_constrained_greedy_parses_and_differs_from_unconstrained():
    engine = char_engine(WANTS_TAP12)
    ids = scripted_prompts()[0]
    free, _ = run(engine, ids, max_new_tokens=10)
    assert free.text == "tap(12)"
    c = engine.constraint(TAP)
    done, _ = run(engine, ids, max_new_tokens=10, constraint=c)
    assert done.stop_reason == "eos" and TAP.matches(done.text) and done.text.startswith("tap(1")


@pytest.mark.parametrize("seed", range(4))
def test_scripted_every_method_equals_constrained_greedy(seed, monkeypatch):
    """Drafts from the prompt and from history hold actions the grammar forbids (tap(12)) and
    valid ones: cut, masked and forced drafts must leave the output of plain decoding."""
    import engine.decoding.constrained as constrained

    cuts = []
    real_subtree = constrained.subtree
    monkeypatch.setattr(constrained, "subtree", lambda t, keep: cuts.append(t.size - len(keep)) or real_subtree(t, keep))
    engine = char_engine(WANTS_TAP12 if seed % 2 == 0 else None, seed=seed, margin=3.0)
    sources = [TAP12, *VALID, TAP12[:3] + [EOS]]
    accepted = 0
    for grammar in (TAP, ACTIONS_CHARS):
        c = engine.constraint(grammar)
        for ids in scripted_prompts():
            ref, ref_steps = run(engine, ids, max_new_tokens=16, constraint=c)
            assert all(s.proposed == 0 and s.accepted == 1 for s in ref_steps)     # vanilla stays plain
            assert c.walk(c.start, ref.token_ids) is not None
            for m in SPECULATIVE:
                done, steps = run(engine, ids, method=m, max_new_tokens=16, constraint=c, sources=sources)
                assert done.token_ids == ref.token_ids and done.stop_reason == ref.stop_reason, (m, ids)
                for s in steps:
                    assert len(s.sources) == s.accepted and set(s.sources) <= set(SOURCES)
                    assert 0 <= s.accepted - 1 <= s.proposed
                accepted += sum(s.accepted - 1 for s in steps)
    assert accepted > 0 and sum(cuts) > 0       # drafts were both accepted and cut


ACTIONS_CHARS = Grammar([["tap(", Free(2, exclude=")"), ")"], ["ok"], ["done(\"", Free(5), "\")"]])


def test_scripted_forced_tokens_are_drafted_and_accepted_in_one_step():
    """"tap(1)xyz" has one tokenization after "tap(1": the forced ")", "x", "y", "z", EOS are
    drafted behind the first token and accepted in one step; vanilla stays one token a step."""
    engine = char_engine({40: 17})
    c = engine.constraint(Grammar([["tap(1)xyz"], ["back()"]]))
    ref, ref_steps = run(engine, [41, 40], max_new_tokens=8, constraint=c)
    assert ref.text == "tap(1)xyz" and ref.stop_reason == "eos" and len(ref_steps) == 5
    for m in SPECULATIVE:
        done, steps = run(engine, [41, 40], method=m, max_new_tokens=8, constraint=c)
        assert done.token_ids == ref.token_ids and len(steps) == 1, m
        assert steps[0].sources == ("constraint",) * 5 + ("model",)
    assert "constraint" in DRAFT_SOURCES


def test_scripted_sampling_emits_only_allowed_tokens():
    engine = char_engine(margin=1.0)
    c = engine.constraint(TAP)
    for seed in range(12):
        for m in ("vanilla", "hexa", "sam"):
            done, _ = run(engine, scripted_prompts()[seed % 4], method=m, max_new_tokens=12, temperature=1.0,
                          seed=seed, constraint=c, sources=VALID)
            assert c.walk(c.start, done.token_ids) is not None
            assert done.stop_reason != "eos" or TAP.matches(done.text)


def test_scripted_sampling_distribution_is_the_constrained_one():
    """P(first two tokens) of constrained speculative sampling equals the masked bigram
    distribution (chi-square, 99.9%)."""
    engine = char_engine(margin=1.0, seed=3)
    grammar = Grammar([["tap(", Free(2, exclude=")"), ")"], ["ok"], ["back()"]])
    c = engine.constraint(grammar)
    ids = [41, 16, 9, 5, 42, 16, 12, 5, 43, 29, 44, 16, 30, 5, 40]
    head = engine.model.lm_head
    exact: dict = {}

    def probs(tok, state):
        return softmax(c.mask_logits(head[:, tok][None], [state])[0])
    p1 = probs(ids[-1], c.start)
    for x1 in np.flatnonzero(p1).tolist():
        s1 = c.advance(c.start, x1)
        if x1 == EOS:
            exact[(x1,)] = exact.get((x1,), 0.0) + float(p1[x1])
            continue
        p2 = probs(x1, s1)
        for x2 in np.flatnonzero(p2).tolist():
            exact[(x1, x2)] = float(p1[x1] * p2[x2])
    trials = 400
    counts: dict = {}
    drafted = 0
    for seed in range(trials):
        done, steps = run(engine, ids, method="hexa", max_new_tokens=2, temperature=1.0, seed=seed, constraint=c)
        key = tuple(done.token_ids) + ((EOS,) if done.stop_reason == "eos" else ())
        counts[key[:2]] = counts.get(key[:2], 0) + 1
        drafted += sum(s.proposed for s in steps)
    assert drafted > 0
    assert set(counts) <= set(exact)
    big = {k: p for k, p in exact.items() if p * trials >= 5}
    other_p = 1 - sum(big.values())
    other = trials - sum(counts.get(k, 0) for k in big)
    stat = sum((counts.get(k, 0) - p * trials) ** 2 / (p * trials) for k, p in big.items())
    df = len(big) - 1
    if other_p * trials >= 1:
        stat += (other - other_p * trials) ** 2 / (other_p * trials)
        df += 1
    z = 3.0902
    assert df >= 2 and stat < df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3, (stat, df)


def test_unconstrained_requests_do_no_constraint_work(monkeypatch):
    import engine.decoding.constrained as constrained

    def boom(*a, **k):
        raise AssertionError("constraint code on an unconstrained request")
    monkeypatch.setattr(constrained.ConstrainedRun, "__init__", boom)
    engine = char_engine(WANTS_TAP12)
    for m in METHODS:
        run(engine, scripted_prompts()[0], method=m, max_new_tokens=6, sources=VALID)


# ---- the real model -------------------------------------------------------------------------
PHONE = ("You control a phone. Answer with exactly one action: tap(N), type(N, \"text\"), back() or "
         "done(\"summary\").")
SCREENS = [
    "Screen: [1] Search box [2] Settings [3] Text field 'Name'. Task: type Alice in the name field.",
    "Screen: [1] Wi-Fi [2] Bluetooth [3] Display [4] Battery. Task: open the battery settings.",
    "Screen: [1] Inbox [2] Compose. The email was sent. Task: send an email to Bob.",
]
HISTORY_TEXT = ['tap(12)', 'type(3, "Alice Smith")', 'done("sent the email to Bob")', 'tap(4)', 'back()',
                'tap(12)tap(13)']


def real_prompts(engine):
    return [engine.chat_ids([{"role": "system", "content": PHONE}, {"role": "user", "content": s}])
            for s in SCREENS]


def test_real_constrained_greedy_parses_and_every_method_is_lossless(engine, monkeypatch):
    import engine.decoding.constrained as constrained

    cuts, outputs = [], set()
    real_subtree = constrained.subtree
    monkeypatch.setattr(constrained, "subtree", lambda t, keep: cuts.append(t.size - len(keep)) or real_subtree(t, keep))
    sources = [engine.encode(t) for t in HISTORY_TEXT]
    grammars = [ACTIONS, Grammar([[f"tap({i})"] for i in range(1, 5)] + [["back()"]]),
                Grammar([["type(3, \"", Free(40), "\")"], ["done(\"", Free(60), "\")"]])]   # free text
    accepted_drafts = 0
    for grammar in grammars:
        c = engine.constraint(grammar)
        for ids in real_prompts(engine):
            ref, _ = run(engine, ids, max_new_tokens=24, constraint=c)
            assert c.walk(c.start, ref.token_ids) is not None
            if ref.stop_reason == "eos":
                assert grammar.matches(ref.text), ref.text
            outputs.add(ref.text)
            for m in SPECULATIVE:
                done, steps = run(engine, ids, method=m, max_new_tokens=24, constraint=c, sources=sources)
                assert done.token_ids == ref.token_ids, (m, ref.text, done.text)
                accepted_drafts += sum(s.accepted - 1 for s in steps)
    print(sorted(outputs), "cut", sum(cuts), "accepted drafts", accepted_drafts)
    assert accepted_drafts > 0 and sum(cuts) > 0 and len(outputs) > 2


def test_real_a_fully_drafted_answer_is_accepted_in_few_steps(engine):
    ids = real_prompts(engine)[0]
    c = engine.constraint(ACTIONS)
    ref, _ = run(engine, ids, max_new_tokens=24, constraint=c)
    done, steps = run(engine, ids, method="hexa", max_new_tokens=24, constraint=c, sources=[list(ref.token_ids)])
    assert done.token_ids == ref.token_ids
    assert done.mean_accepted > 1 and max(s.accepted for s in steps) > 2


def test_real_sampling_emits_only_allowed_tokens(engine):
    c = engine.constraint(ACTIONS)
    for seed, ids in enumerate(real_prompts(engine)):
        for m in ("vanilla", "hexa"):
            done, _ = run(engine, ids, method=m, max_new_tokens=24, temperature=1.0, seed=seed, constraint=c)
            assert c.walk(c.start, done.token_ids) is not None
            assert done.stop_reason != "eos" or ACTIONS.matches(done.text), done.text


def test_char_grammar_states_are_small():
    g = CharGrammar(ACTIONS)
    assert len(g.walk(g.start, 'done("a')) <= 3
