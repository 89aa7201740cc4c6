"""``hexa serve`` through the official ``openai`` client, on loopback, against the real embedded
model: chat and completions, streamed and not, text and token-id prompts, answers identical to the
engine's own greedy decoding, prefix reuse, cancel by disconnect, queue full, bad requests, and
200 concurrent requests of which none is lost."""
from __future__ import annotations

import asyncio
import threading
import time
import uuid
from dataclasses import replace

import httpx
import openai
import pytest

from support.serve_helpers import serving, status

COUNT = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"      # the model keeps counting: a long answer


@pytest.fixture(scope="module")
def server(engine):
    with serving(lambda: engine) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def model(engine):
    return engine.model_name


def greedy(engine, ids, max_new):
    """The engine's own answer: plain greedy decoding, no speculation, no reused KV."""
    done = None
    for event in engine.generate(ids, max_new_tokens=max_new, method="vanilla", reuse=False):
        done = event
    return done


def test_models_lists_the_engine(client, model):
    assert [m.id for m in client.models.list().data] == [model]
    assert client.models.retrieve(model).id == model


def test_chat_streamed_and_whole_equal_the_engines_greedy_answer(engine, client, model):
    messages = [{"role": "system", "content": "You are brief."},
                {"role": "user", "content": "Name three colours of the rainbow."}]
    want = greedy(engine, engine.chat_ids(messages), 40)
    # the server decodes with its speculative method (hexa): through HTTP too, exactly greedy's tokens
    whole = client.chat.completions.create(model=model, messages=messages, max_tokens=40, temperature=0)
    assert whole.choices[0].message.content == want.text
    assert whole.model_extra["hexa"]["done"]["token_ids"] == list(want.token_ids)
    assert whole.usage.completion_tokens == want.new_tokens and whole.usage.prompt_tokens == want.prompt_tokens
    assert whole.choices[0].finish_reason == ("length" if want.stop_reason == "max_tokens" else "stop")

    chunks = list(client.chat.completions.create(model=model, messages=messages, max_tokens=40, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == want.text
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].usage.completion_tokens == want.new_tokens       # the usage chunk comes last
    figures = [c.model_extra["hexa"] for c in chunks if c.choices]
    steps = [s for f in figures for s in f.get("steps", ())]
    done = figures[-1]["done"]
    # every step's figures arrive with the stream, and add up to the request's totals
    assert len(steps) == done["steps"] and sum(s["accepted"] for s in steps) + 1 >= want.new_tokens
    assert all(s["accepted"] >= 1 and s["verify_ms"] > 0 and set(s["sources"]) for s in steps)
    assert done["method"] == "hexa" and any("prefill" in f for f in figures)


def test_completions_text_and_token_ids_are_the_same_request(engine, client, model):
    prompt = "The capital of France is"
    ids = engine.encode(prompt)
    want = greedy(engine, ids, 16)
    by_text = client.completions.create(model=model, prompt=prompt, max_tokens=16, temperature=0)
    by_ids = client.completions.create(model=model, prompt=ids, max_tokens=16, temperature=0)
    assert by_text.choices[0].text == by_ids.choices[0].text == want.text
    assert by_ids.usage.prompt_tokens == len(ids)
    streamed = client.completions.create(model=model, prompt=[ids], max_tokens=16, temperature=0, stream=True)
    assert "".join(c.choices[0].text for c in streamed) == want.text


def test_an_answer_continued_by_its_ids_goes_on_as_the_uncut_one(engine, client, model):
    """``hexa.continues``: the prompt's last ids are the answer so far (a router's hand-over),
    fed in decoding's arithmetic; the rest is what one uncut request would have given."""
    ids = engine.encode("The three primary colours are")
    uncut = greedy(engine, ids, 16)
    start = list(uncut.token_ids[:6])
    rest = client.completions.create(model=model, prompt=ids + start, max_tokens=10, temperature=0,
                                     extra_body={"hexa": {"continues": len(start)}})
    assert engine.decode(start) + rest.choices[0].text == uncut.text
    assert rest.usage.prompt_tokens == len(ids) + len(start)


def test_tokenize_and_detokenize_are_the_engines(engine, server):
    """llama-server's /tokenize and /detokenize: a router finds the device's own ids here."""
    text = "Hello, wörld — 42 tokens?"
    r = httpx.post(server.url + "/tokenize", json={"content": text}, timeout=10)
    assert r.status_code == 200 and r.json() == {"tokens": engine.encode(text)}
    r = httpx.post(server.url + "/detokenize", json={"tokens": engine.encode(text)}, timeout=10)
    assert r.status_code == 200 and r.json()["content"] == text
    for path, body in (("/tokenize", {"content": 3}), ("/detokenize", {"tokens": [-1]}),
                       ("/detokenize", {"tokens": "abc"})):
        r = httpx.post(server.url + path, json=body, timeout=10)
        assert r.status_code == 400 and "needed" in r.json()["error"]["message"], (path, r.text)


def test_stop_seed_and_sampling_options(client, model):
    # a stop string ends the answer before it, as OpenAI's API does
    r = client.completions.create(model=model, prompt=COUNT, max_tokens=40, temperature=0, stop=[" 14"])
    assert r.choices[0].finish_reason == "stop" and "14" not in r.choices[0].text and "13" in r.choices[0].text
    # sampling with a seed is repeatable; with plain decoding here: a speculative method's random
    # draws follow its drafts, which change as answers are indexed (the distribution does not)
    kw = dict(model=model, prompt="Once upon a time", max_tokens=12, temperature=1.0, top_p=0.9, seed=7,
              extra_body={"hexa": {"method": "vanilla"}})
    assert client.completions.create(**kw).choices[0].text == client.completions.create(**kw).choices[0].text


def test_a_second_request_sharing_a_prefix_prefills_less(client, model):
    system = f"You are assistant {uuid.uuid4().hex}. Answer in one short sentence."
    first_msgs = [{"role": "system", "content": system}, {"role": "user", "content": "What is the sun?"}]
    first = client.chat.completions.create(model=model, messages=first_msgs, max_tokens=12)
    second_msgs = first_msgs + [{"role": "assistant", "content": first.choices[0].message.content},
                                {"role": "user", "content": "And the moon?"}]
    second = client.chat.completions.create(model=model, messages=second_msgs, max_tokens=12)
    cold = first.usage.prompt_tokens - first.usage.prompt_tokens_details.cached_tokens
    warm = second.usage.prompt_tokens - second.usage.prompt_tokens_details.cached_tokens
    # the whole first exchange (the prompt and its kept answer) is served from the engine's prefix store
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens
    assert warm < cold and second.model_extra["hexa"]["done"]["reused_tokens"] > 0


def test_history_drafting_indexes_answers(engine, client, model, server):
    before = len(engine.history)
    client.completions.create(model=model, prompt=f"Say {uuid.uuid4().hex[:6]}:", max_tokens=6)
    assert len(engine.history) == before + 1
    client.completions.create(model=model, prompt="Hello", max_tokens=6, extra_body={"hexa": {"index": False}})
    assert len(engine.history) == before + 1
    state = server.app.state.hexa          # the history_drafting setting governs it
    kept = state.settings
    state.settings = replace(kept, history_drafting=False)
    try:
        client.completions.create(model=model, prompt=f"Say {uuid.uuid4().hex[:6]}:", max_tokens=6)
        assert len(engine.history) == before + 1
    finally:
        state.settings = kept


def test_a_client_that_disconnects_cancels_its_request(client, model, server):
    stream = client.completions.create(model=model, prompt=COUNT, max_tokens=1500, temperature=0, stream=True)
    for _, _chunk in zip(range(4), stream):
        pass
    t0 = time.perf_counter()
    stream.close()
    r = client.completions.create(model=model, prompt="Hi", max_tokens=2)
    assert r.choices[0].text is not None
    assert time.perf_counter() - t0 < 5          # 1500 tokens would take 10 s or more
    mine = [e for e in status(server)["recent"] if e["stop_reason"] == "cancelled"]
    assert mine and mine[-1]["new_tokens"] < 1500


def test_a_client_waiting_for_a_whole_answer_that_leaves_cancels_it(client, model, server, engine):
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server.url + "/v1/completions", timeout=httpx.Timeout(10, read=1.0),
                   json={"model": model, "prompt": COUNT, "max_tokens": 1500, "temperature": 0})
    deadline = time.time() + 3
    while status(server)["queue"]["running"] and time.time() < deadline:
        time.sleep(0.05)
    ends = status(server)["recent"]
    assert status(server)["queue"]["running"] == 0 and ends[-1]["stop_reason"] == "cancelled", ends[-1]
    assert ends[-1]["new_tokens"] < 1500


def test_queue_full_is_429_and_waiting_requests_are_served(client, model, server):
    queue = server.app.state.hexa.queue
    queue.waiting = 1
    try:
        running = client.completions.create(model=model, prompt=COUNT, max_tokens=1500, stream=True)
        next(iter(running))
        answers: list = []
        waiting = threading.Thread(target=lambda: answers.append(
            client.completions.create(model=model, prompt="Hi", max_tokens=2)))
        waiting.start()
        deadline = time.time() + 10
        while status(server)["queue"]["waiting"] < 1 and time.time() < deadline:
            time.sleep(0.05)
        with pytest.raises(openai.RateLimitError) as refused:
            client.completions.create(model=model, prompt="Hi", max_tokens=2)
        assert refused.value.status_code == 429 and refused.value.body["code"] == "queue_full"
        assert refused.value.response.headers["retry-after"] == "1"
        running.close()
        waiting.join(30)
        assert len(answers) == 1 and answers[0].choices[0].finish_reason
    finally:
        queue.waiting = 256


@pytest.mark.parametrize("payload, status_code, words", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "JSON object"),
    ({"model": "gpt-4o", "prompt": "hi"}, 404, "does not exist"),
    ({"prompt": "hi"}, 400, "model"),
    ({"prompt": "hi", "max_tokens": 0}, 400, "max_tokens"),
    ({"prompt": "hi", "max_tokens": -3}, 400, "max_tokens"),
    ({"prompt": "hi", "max_tokens": "5"}, 400, "max_tokens"),
    ({"prompt": "hi", "temperature": "hot"}, 400, "temperature"),
    ({"prompt": "hi", "top_p": 0}, 400, "top_p"),
    ({"prompt": "hi", "n": 2}, 400, "n"),
    ({"prompt": "hi", "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
    ({"prompt": "hi", "stream": "yes"}, 400, "stream"),
    ({"prompt": [10 ** 9]}, 400, "token ids"),
    ({"prompt": ""}, 400, "empty"),
    ({"prompt": ["a", "b"]}, 400, "one prompt"),
    ({"prompt": 3}, 400, "prompt"),
    ({"prompt": "hi", "hexa": {"method": "magic"}}, 400, "unknown method"),
    ({"prompt": list(range(5000))}, 400, "context window"),
    ({"prompt": "hi", "hexa": {"grammar": [[{"free": 5}, {"free": 5}]]}}, 400, "hexa.grammar"),
    ({"prompt": "hi", "hexa": {"grammar": [[{"free": 0}]]}}, 400, "grammar"),
    ({"prompt": "hi", "repeat_penalty": 0}, 400, "repeat_penalty"),
    ({"prompt": "hi", "dry_base": 0.5}, 400, "dry_base"),
    ({"prompt": "hi", "min_p": 1}, 400, "min_p"),
    ({"prompt": [1, 2, 3], "hexa": {"continues": 3}}, 400, "hexa.continues"),
    ({"prompt": "hi", "hexa": {"continues": -1}}, 400, "continues"),
])
def test_bad_completion_requests_are_4xx_json(server, model, payload, status_code, words):
    if isinstance(payload, dict):
        payload = {"model": model} | payload if "model" not in payload and payload != {"prompt": "hi"} else payload
        r = httpx.post(server.url + "/v1/completions", json=payload, timeout=30)
    else:
        r = httpx.post(server.url + "/v1/completions", content=payload, timeout=30,
                       headers={"content-type": "application/json"})
    assert r.status_code == status_code, r.text
    error = r.json()["error"]
    assert words in error["message"] and "Traceback" not in r.text and "\n" not in error["message"]


@pytest.mark.parametrize("messages, words", [
    ([], "messages"), ([{"role": "wizard", "content": "hi"}], "role"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], "content"),
    ("hi", "messages"),
])
def test_bad_chat_requests_are_400_json(server, model, messages, words):
    r = httpx.post(server.url + "/v1/chat/completions", json={"model": model, "messages": messages}, timeout=30)
    assert r.status_code == 400 and words in r.json()["error"]["message"], r.text


def test_the_openai_client_sees_typed_errors(client, model):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=0)
    assert bad.value.body["param"] == "max_tokens"
    r = httpx.get(str(client.base_url) + "nowhere", timeout=10)
    assert r.status_code == 404 and "error" in r.json()


def test_200_concurrent_requests_lose_nothing(server, model):
    """All 200 are answered (the queue holds them: no 429 here, max_retries=0 would surface one),
    each with the answer its prompt gets alone."""
    prompts = [f"Count from {k}:" for k in range(5)]
    sync = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
    alone = {p: sync.completions.create(model=model, prompt=p, max_tokens=3, temperature=0).choices[0].text
             for p in prompts}

    async def burst():
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
        jobs = [client.completions.create(model=model, prompt=prompts[k % 5], max_tokens=3, temperature=0,
                                          stream=k % 2 == 1) for k in range(200)]
        results = await asyncio.gather(*jobs)
        texts = []
        for r in results:
            if isinstance(r, openai.AsyncStream):
                texts.append("".join([c.choices[0].text async for c in r]))
            else:
                texts.append(r.choices[0].text)
        await client.close()
        return texts

    t0 = time.perf_counter()
    texts = asyncio.run(burst())
    assert texts == [alone[prompts[k % 5]] for k in range(200)]
    assert time.perf_counter() - t0 < 45
    deadline = time.time() + 5      # a streamed answer's [DONE] may precede its job's last step (indexing)
    while status(server)["queue"]["running"] and time.time() < deadline:
        time.sleep(0.05)
    assert status(server)["queue"] == {"running": 0, "waiting": 0, "max_waiting": 256}
