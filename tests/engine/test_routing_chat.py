"""Chat-only servers (OpenAI's and most cloud APIs take messages, never a raw prompt): the prompt's
messages read back from its ids on the real tokenizer, the probe that finds a chat-only server,
chat streaming, the settings key. The real-server path is in test_routing_chat_serve.py."""
from __future__ import annotations

import asyncio
import json
import random

import httpx
import pytest

from app.settings import ConfigError, parse_servers
from engine.routing.chat import ChatFrames, chat_messages
from engine.routing.client import Endpoint, ServerClient

WORDS = ["sleep", "the", "Paris", "année", "日本", "42", "well,", "why?", "—", "code:", "x = 1", "ok."]


def sentence(rng: random.Random) -> str:
    parts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 3))]
    return rng.choice(["\n\n", "\n", " "]).join(parts)


def conversation(rng: random.Random) -> list[dict]:
    turns = []
    for i in range(rng.choice([1, 3, 5])):
        turns.append({"role": "user" if i % 2 == 0 else "assistant", "content": sentence(rng)})
    if rng.random() < 0.5:
        turns.insert(0, {"role": "system", "content": sentence(rng)})
    return turns


def test_messages_are_read_back_from_their_ids(tokenizer_engine):
    tok = tokenizer_engine.tokenizer
    frames = ChatFrames.learn(tok)
    assert frames is not None and frames.head_system is not None
    rng = random.Random(7)
    for _ in range(60):
        conv = conversation(rng)
        ids = tokenizer_engine.chat_ids(conv)
        back = chat_messages(tok, frames, ids)
        assert back is not None and tokenizer_engine.chat_ids(back) == ids, conv
        assert [m for m in back if m["role"] != "system"] == [m for m in conv if m["role"] != "system"]
        assert back[0] == conv[0] or conv[0]["role"] != "system"


def test_no_system_prompt_leaves_the_templates_default_to_the_server(tokenizer_engine):
    """SmolLM2's template writes its own system prompt when none is given: the server is not told
    to be SmolLM."""
    conv = [{"role": "user", "content": "What is the capital of France?"}]
    ids = tokenizer_engine.chat_ids(conv)
    assert "SmolLM" in tokenizer_engine.tokenizer.decode(ids, skip_special_tokens=False)
    assert chat_messages(tokenizer_engine.tokenizer, ChatFrames.learn(tokenizer_engine.tokenizer), ids) == conv


def test_prompts_without_a_chat_form_stay_on_the_device(tokenizer_engine):
    tok, frames = tokenizer_engine.tokenizer, ChatFrames.learn(tokenizer_engine.tokenizer)
    ids = tokenizer_engine.chat_ids([{"role": "user", "content": "Name three colors."}])
    assert chat_messages(tok, frames, ids + tokenizer_engine.encode("Red, green")) is None   # a continued answer
    assert chat_messages(tok, frames, tokenizer_engine.encode("plain text, no template")) is None
    assert chat_messages(tok, None, ids) is None


def test_a_tokenizer_without_a_template_has_no_frames(tokenizer_engine):
    class Bare:
        chat_template = None
    assert ChatFrames.learn(Bare()) is None


def fake_server(chat_only: bool, seen: list[str]):
    """An OpenAI-style endpoint for the probe and the stream's parsing (the real server path is
    tested against hexa serve)."""
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "cloud-model"}]})
        if request.url.path.endswith("/chat/completions"):
            body = json.loads(request.content)
            assert body["model"] == "cloud-model" and body["messages"][-1]["role"] == "user"
            if not body.get("stream"):
                return httpx.Response(200, json={"choices": [{"message": {"content": "Hi"}}]})
            chunks = [{"choices": [{"delta": {"role": "assistant"}}]}, {"choices": [{"delta": {"content": "Hel"}}]},
                      {"choices": [{"delta": {"content": "lo."}}]}, {"choices": [], "usage": {"total_tokens": 3}}]
            text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})
        if request.url.path.endswith("/completions"):
            if chat_only:
                return httpx.Response(404, json={"error": {"message": "This is a chat model"}})
            return httpx.Response(200, json={"choices": [{"text": "Hi"}]})
        return httpx.Response(404)
    return httpx.MockTransport(handler)


def test_the_probe_finds_a_chat_only_server_and_streams_its_messages():
    async def main(chat_only: bool, api: str = "auto"):
        seen: list[str] = []
        client = ServerClient(Endpoint("cloud", "http://cloud.test/v1", api=api), transport=fake_server(chat_only, seen))
        caps = await client.probe(lambda s: [len(s)])
        text = ""
        if caps.chat:
            async for piece in client.stream([{"role": "user", "content": "Hello?"}], 8):
                text += piece
        await client.aclose()
        return caps, text, seen

    caps, text, seen = asyncio.run(main(chat_only=True))
    assert caps.chat and caps.handover == "text" and text == "Hello."
    assert "/v1/chat/completions" in seen
    caps, _, _ = asyncio.run(main(chat_only=False))
    assert not caps.chat
    caps, text, seen = asyncio.run(main(chat_only=False, api="chat"))     # told: no probing needed
    assert caps.chat and text == "Hello." and "/v1/completions" not in seen


def test_the_api_key_of_a_server_is_checked():
    assert parse_servers({"c": {"url": "https://api.example/v1", "api": "chat"}}, "")["c"]["api"] == "chat"
    with pytest.raises(ConfigError, match="api = 'messages': expected one of auto, completions, chat"):
        parse_servers({"c": {"url": "https://api.example/v1", "api": "messages"}}, "config.toml")
