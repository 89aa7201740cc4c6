"""``hexa serve`` as the router's server (the same model file on a bigger machine, say): it shares
the device's vocabulary, found through its /tokenize, and takes token-id prompts, so an answer the
device started is handed over as token ids: no text cut, nothing retokenized."""
from __future__ import annotations

import asyncio

import pytest

from engine.routing.client import Endpoint, ServerClient
from engine.routing.models import Prices
from engine.routing.policy import Plan
from support.serve_helpers import live as make_live, own_engine, serving

pytestmark = pytest.mark.slow
QUESTION = [{"role": "user", "content": "Give three tips for staying focused while studying."}]


def test_an_answer_moves_to_hexa_serve_by_token_ids(engine):
    told: list[int] = []       # each request's ``continues``, as the server's engine was given it

    def load():
        server_engine = own_engine()
        generate = server_engine.generate

        def heard(*args, **kw):
            told.append(kw.get("continues", 0))
            return generate(*args, **kw)
        server_engine.generate = heard
        return server_engine

    with serving(load) as server:
        async def main():
            client = ServerClient(Endpoint("box", server.url + "/v1"))
            caps = await client.probe(engine.encode)
            live = make_live(engine, client, caps, Prices(1e-6, 1e-6))
            out = await live.serve(engine.chat_ids(QUESTION), Plan(None, 0.0), 40, force_migrate_at=8)
            await client.aclose()
            return caps, out
        caps, out = asyncio.run(main())
    assert caps.same_vocab and caps.ids and not caps.chat and caps.handover == "ids" and caps.hexa
    assert out.migrated and out.handover == "ids" and out.served_by == "device+server"
    (first, kept), (second, more) = out.parts
    assert (first, second) == ("device", "server") and kept >= 8 and more > 0
    # the server was told which ids are the answer so far (hexa.continues): it feeds them as decoding
    # did, where bf16 prompt rows could make a near tie end the answer otherwise
    assert told[-1] == kept
    # the server went on from the device's exact ids: the device's own start is kept whole
    own = list(engine.generate(engine.chat_ids(QUESTION), max_new_tokens=kept, reuse=False))[-1].text
    assert out.text.startswith(own)
    # and, the same model greedy on both sides, the whole answer is the one the device alone
    # would have given
    alone = list(engine.generate(engine.chat_ids(QUESTION), max_new_tokens=40, reuse=False))[-1].text
    assert out.text == alone
