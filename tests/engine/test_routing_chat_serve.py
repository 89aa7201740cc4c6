"""A chat-only server for real: ``hexa serve`` on the real model, spoken to through
/v1/chat/completions only (``api = "chat"``, as a cloud API would be). The router sends it the
messages its prompt ids were built from and streams its answer; a prompt with no chat form (a
continued answer) and a device-served answer are never handed to it."""
from __future__ import annotations

import asyncio

import pytest

from engine.events import Done, Text
from engine.routing.client import Endpoint, ServerClient
from engine.routing.models import Prices
from engine.routing.policy import Plan
from engine.routing.router import Router
from support.serve_helpers import live as make_live, own_engine, serving

pytestmark = pytest.mark.slow
MESSAGES = [{"role": "system", "content": "You are brief."},
            {"role": "user", "content": "Give two tips for sleeping well."}]


@pytest.fixture(scope="module")
def chat_server():
    with serving(own_engine) as server:
        yield server.url + "/v1"


def test_a_chat_only_server_answers_the_messages_the_prompt_was_built_from(engine, chat_server, tmp_path):
    ids = engine.chat_ids(MESSAGES)
    own = list(engine.generate(ids, max_new_tokens=40, reuse=False))[-1]
    router = Router(engine, Endpoint("cloud", chat_server, api="chat"), Prices(server_in=1e-7, server_out=1e-6),
                    budget=0.5, policy="server", state_path=tmp_path / "routing.json")
    events = list(router.generate(ids, max_new_tokens=40))
    done = events[-1]
    assert router.caps.chat and isinstance(done, Done) and done.served_by.startswith("cloud")
    assert "device" not in done.served_by          # the server policy: no migration to the device
    # the same model greedy on the same chat: the server's answer is the device's own
    assert done.text == own.text and "".join(e.delta for e in events if isinstance(e, Text)) == own.text

    # a second request (its own client, what the first one's probe found adopted)
    other = [{"role": "user", "content": "Name three primary colors."}]
    own2 = list(engine.generate(engine.chat_ids(other), max_new_tokens=24, reuse=False))[-1]
    done2 = list(router.generate(engine.chat_ids(other), max_new_tokens=24))[-1]
    assert done2.served_by.startswith("cloud") and done2.text == own2.text

    # a continued answer has no chat form: the device serves it (its own events, no server part)
    more = list(router.generate(ids + list(own.token_ids), max_new_tokens=8))
    assert isinstance(more[-1], Done) and not more[-1].served_by


def test_an_answer_is_never_handed_to_a_chat_only_server(engine, chat_server):
    async def main():
        client = ServerClient(Endpoint("cloud", chat_server, api="chat"))
        caps = await client.probe(engine.encode)
        live = make_live(engine, client, caps, Prices(1e-6, 1e-6))
        ids = engine.chat_ids(MESSAGES)
        device = await live.serve(ids, Plan(None, 0.0), 32, force_migrate_at=6, messages=MESSAGES)
        server = await live.serve(ids, Plan(0.0, None), 32, migrate=False, messages=MESSAGES)
        await client.aclose()
        return device, server

    device, server = asyncio.run(main())
    assert device.served_by == "device" and not device.migrated and device.server_in == 0
    assert server.served_by == "server" and server.text


def test_live_takes_device_options_that_say_continues(engine, chat_server):
    """``continues`` in the options the router hands ``Live`` (a zero said outright) is no second
    keyword for a device run's own; a continued answer given to ``Live`` is refused in one line."""
    async def main():
        client = ServerClient(Endpoint("cloud", chat_server, api="chat"))
        caps = await client.probe(engine.encode)
        live = make_live(engine, client, caps, Prices(1e-6, 1e-6), {"reuse": False, "continues": 0})
        out = await live.serve(engine.chat_ids(MESSAGES), Plan(None, 0.0), 8, messages=MESSAGES)
        await client.aclose()
        return out

    out = asyncio.run(main())
    assert out.served_by == "device" and out.text
    with pytest.raises(ValueError, match="continued answer"):
        make_live(engine, None, None, Prices(1e-6, 1e-6), {"continues": 3})
