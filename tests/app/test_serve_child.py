"""The app's engine in another process: ``RemoteEngine`` over a real ``hexa serve`` (in a thread here,
a child process in the last tests) gives the app what the engine in process gives it: the same
tokens, the same kinds of events for the live panels, cancel, drafting sources, token counts."""
from __future__ import annotations

import threading

import pytest

from app.serve.client import RemoteEngine
from engine.errors import EngineError
from engine.events import Done, Prefill, Step, Text
from support.serve_helpers import serving

MESSAGES = [{"role": "system", "content": "You are brief."},
            {"role": "user", "content": "Give two tips for sleeping well."}]


@pytest.fixture(scope="module")
def remote(engine):
    with serving(lambda: engine) as server:
        client = RemoteEngine(server.url)
        yield client
        client.close()


def test_tokens_are_the_engines(engine, remote):
    assert remote.model_name == engine.model_name and remote.context_window == engine.context_window
    assert remote.chat_ids(MESSAGES) == engine.chat_ids(MESSAGES)
    text = "Hello, wörld — 42 tokens?"
    assert remote.encode(text) == engine.encode(text)
    assert remote.decode(engine.encode(text)) == engine.decode(engine.encode(text))


def test_generate_streams_the_engines_events_and_answer(engine, remote):
    ids = engine.chat_ids(MESSAGES)
    local = list(engine.generate(ids, max_new_tokens=60, method="hexa", reuse=False))
    events = list(remote.generate(ids, max_new_tokens=60, method="hexa", keep_answer=True))
    done = events[-1]
    assert isinstance(done, Done) and done.token_ids == local[-1].token_ids and done.text == local[-1].text
    assert "".join(e.delta for e in events if isinstance(e, Text)) == done.text
    steps = [e for e in events if isinstance(e, Step)]
    assert len(steps) == done.steps and all(e.accepted >= 1 for e in steps)
    assert any(isinstance(e, Prefill) for e in events) and done.method == "hexa"


def test_cancel_stops_the_request_and_keeps_its_figures(engine, remote):
    cancel = threading.Event()
    events = remote.generate(engine.encode("1, 2, 3, 4, 5,"), max_new_tokens=1500, cancel=cancel)
    seen = 0
    for event in events:
        if isinstance(event, Text):
            seen += 1
            if seen == 5:
                cancel.set()
        if isinstance(event, Done):
            done = event
    assert done.stop_reason == "cancelled" and 5 <= done.new_tokens < 1500 and len(done.token_ids) == done.new_tokens


def test_index_response_reaches_the_served_engine(engine, remote):
    before = len(engine.history)
    remote.index_response(engine.encode("a response worth drafting from later"))
    assert len(engine.history) == before + 1


def test_constrained_choices_are_the_engines(engine, remote):
    """The UI agent's choices (a grammar of letters, and free text) decode alike in either process."""
    from engine.decoding.grammar import Free, Grammar

    ids = engine.chat_ids([{"role": "user", "content": "Pick one: A) tap OK, B) go back, C) type a name."}])
    for grammar in (Grammar([["A"], ["B"], ["C"]]), Grammar([["type(\"", Free(20), "\")"], ["back()"]])):
        here = list(engine.generate(ids, max_new_tokens=24, constraint=engine.constraint(grammar)))[-1]
        there = list(remote.generate(ids, max_new_tokens=24, constraint=remote.constraint(grammar)))[-1]
        assert there.token_ids == here.token_ids and grammar.matches(there.text), there.text


def test_no_server_is_one_line():
    with pytest.raises(EngineError, match="no hexa server at http://127.0.0.1:9"):
        RemoteEngine("http://127.0.0.1:9")


def test_the_app_answers_alike_with_its_engine_in_a_child_process(engine):
    """The headless app through a real ``hexa serve`` child: the same answer as in process."""
    from app.serve.child import start
    from app.settings import Settings
    from app.tui.bench import measure

    child = start(Settings())
    try:
        assert child.proc.poll() is None and child.model_name == engine.model_name
        pair = measure(engine, "Name three fruits.", "vanilla", 40, child=child)
        assert pair.child_tokens == pair.app_tokens == pair.engine_tokens > 0
        assert pair.child_decode_tok_s > 0
    finally:
        child.close()
    assert child.proc.poll() is not None


def test_a_child_that_dies_is_reported_in_one_line_and_started_again(engine):
    """kill -9 of the engine process mid-answer: the answer ends with one line saying how, and the
    next request starts a new process (and says so) and answers as before."""
    import os
    import signal

    from app.serve.child import start
    from app.settings import Settings
    from engine.events import Notice

    ids = engine.chat_ids(MESSAGES)
    child = start(Settings())
    first = child.proc
    try:
        with pytest.raises(EngineError, match="context"):       # a live child's own error line
            list(child.generate(list(range(engine.context_window + 10)), max_new_tokens=5))
        with pytest.raises(EngineError, match=r"^the engine process ended \(killed by signal 9 \(SIGKILL\)\): "
                                              r"the next request starts a new one$"):
            for i, event in enumerate(child.generate(ids, max_new_tokens=200)):
                if isinstance(event, Text) and i > 3:
                    os.kill(child.proc.pid, signal.SIGKILL)
        child.index_response([1, 2, 3])          # nothing to index into: no error
        events = list(child.generate(ids, max_new_tokens=30))
        assert isinstance(events[0], Notice) and "killed by signal 9" in events[0].message, events[0]
        assert child.proc is not first and child.proc.poll() is None and f"process {child.proc.pid}" in child.backend_name
        want = list(engine.generate(ids, max_new_tokens=30, reuse=False))[-1]
        assert events[-1].token_ids == want.token_ids
    finally:
        child.close()
    assert child.proc.poll() is not None and first.poll() is not None


def test_the_app_picks_its_engine_from_the_settings(monkeypatch):
    from app.settings import Settings
    from app.tui.runtime import app_engine

    with pytest.raises(EngineError, match="no hexa server at http://127.0.0.1:9"):
        app_engine(Settings(engine_url="http://127.0.0.1:9"), None, print)
    started = []
    monkeypatch.setattr("app.serve.child.start", lambda settings, progress: started.append(settings) or "child")
    assert app_engine(Settings(engine_process="child"), None, print) == "child" and len(started) == 1


@pytest.mark.slow
async def test_the_app_with_engine_process_child_chats_and_stops_its_child(tmp_path):
    """The real path: the app's own engine factory starts ``hexa serve``, chats through it (the
    answer stored in memory with its token ids, the live figures filled), and stops it on quit."""
    from app.settings import Loaded, Settings
    from support.tui_helpers import RecordingApp, chat, hash_memory, locations_in, ready

    locs = locations_in(tmp_path)
    app = RecordingApp(Loaded(Settings(engine_process="child", max_tokens=12, retrieval=False), locs.config_file),
                       locs, memory_factory=hash_memory)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        child = app.runtime.engine.engine
        assert child.proc.poll() is None and "process" in app.device.backend
        await chat(pilot, "Hello there")
        done = app.screen.metrics.done
        assert done is not None and done.new_tokens >= 1 and app.screen.metrics.steps == done.steps
        stored = app.runtime.memory.messages(app.screen.session_id)[-1]
        assert stored.role == "assistant" and list(stored.token_ids) == list(done.token_ids)
    assert child.proc.wait(15) is not None


def test_penalties_and_truncation_cross_the_server(engine, remote):
    """A mode's penalties reach the served engine (docs/sampling.md): the same answer as in process,
    and not the answer without them."""
    from engine.decoding.penalties import Penalties

    ids = engine.chat_ids([{"role": "user", "content": "List 20 tips for cooking with a food processor."}])
    pen = Penalties(repeat_penalty=1.3, dry_multiplier=0.8, penalize_prompt=False)
    local = list(engine.generate(ids, max_new_tokens=60, method="hexa", reuse=False, penalties=pen))[-1]
    plain = list(engine.generate(ids, max_new_tokens=60, method="hexa", reuse=False))[-1]
    done = list(remote.generate(ids, max_new_tokens=60, method="hexa", penalties=pen, top_k=40, min_p=0.05))[-1]
    assert done.token_ids == local.token_ids != plain.token_ids
