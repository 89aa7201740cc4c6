"""The router as the assistant uses it: ``generate`` has the engine's signature and yields the
engine's events, whichever endpoint serves. A request the policy keeps on the device alone is the
engine's own request (every live panel as before); one that involves the server is raced and
maybe migrated, its text streamed as ``Text`` events and closed by a ``Done`` that says which
endpoint served each part. A server that cannot be reached leaves the device serving, with one
``Notice`` saying why."""
from __future__ import annotations

import asyncio
import queue as queues
import random
import threading
import time
from pathlib import Path
from typing import Iterator

from ..errors import EngineError
from ..events import Done, Event, Notice, Text
from .chat import ChatFrames, chat_messages
from .client import Endpoint, ServerClient
from .live import Live
from .measure import measure_device
from .models import Prices, load_state, save_state
from .policy import make_policy

PROBE_REQUESTS = 3          # server TTFTs observed before the first routed request, if none are kept


class Router:
    def __init__(self, engine, endpoint: Endpoint, prices: Prices, *, budget: float, policy: str,
                 state_path: Path, read_rate: float = 5.0):
        self.engine, self.endpoint, self.prices = engine, endpoint, prices
        self.budget, self.policy_name, self.state_path = budget, policy, Path(state_path)
        self.read_rate = read_rate
        self.state = None
        self.caps = None
        self.down = ""              # why the server is not used (set once; the device serves)
        self.frames = None          # the chat template's frames, for a chat-only server (False: none)
        self.model = ""             # the server's model, as the probe found it

    def describe(self) -> str:
        return f"{self.policy_name} routing with {self.endpoint.name} ({self.endpoint.url}), budget {self.budget}"

    async def _prepare(self, client: ServerClient, ids: list[int]) -> None:
        if self.state is None:
            self.state = load_state(self.state_path)
        if self.state.device is None:   # once: a short measurement of this device's prefill
            self.state.device = measure_device(self.engine, lengths=(64, 256), repeats=1, decode_tokens=4)
        if self.caps is None:
            self.caps = await client.probe(self.engine.encode)
            self.model = client.model
        else:
            client.adopt(self.caps, self.model)      # what the first request's probe found
        fit = self.state.server(self.endpoint.name)
        if fit is None or len(fit.samples) < PROBE_REQUESTS:
            text = self.engine.tokenizer.decode(ids[-64:], skip_special_tokens=client.chat)
            for _ in range(PROBE_REQUESTS):
                self.state.observe(self.endpoint.name, await client.ttft(text))

    def generate(self, ids: list[int], *, max_new_tokens: int, cancel: threading.Event | None = None,
                 temperature: float = 0.0, **options) -> Iterator[Event]:
        # an answer continued from its own ids (the app's F5) stays on the device: its ids go to no server
        if not options.get("continues"):
            options.pop("continues", None)       # a zero said outright: Live's runs say their own
        if self.policy_name == "device" or self.down or options.get("continues"):
            yield from self.engine.generate(ids, max_new_tokens=max_new_tokens, cancel=cancel,
                                            temperature=temperature, **options)
            return
        events: queues.Queue = queues.Queue()
        result: dict = {}
        worker = threading.Thread(target=lambda: asyncio.run(self._serve(ids, max_new_tokens, cancel, temperature,
                                                                         options, events, result)), daemon=True)
        worker.start()
        while True:
            ev = events.get()
            if ev is None:
                break
            yield ev
        worker.join()
        if "device" in result:            # the server could not be used: the device serves
            yield from self.engine.generate(ids, max_new_tokens=max_new_tokens, cancel=cancel,
                                            temperature=temperature, **options)

    async def _serve(self, ids, max_new, cancel, temperature, options, events: queues.Queue, result: dict):
        client = ServerClient(self.endpoint)
        t0 = time.perf_counter()
        try:
            try:
                await self._prepare(client, ids)
            except EngineError as exc:
                self.down = f"device serves: {exc}"
                events.put(Notice(self.down))
                result["device"] = True
                return
            messages = None
            if self.caps.chat:
                if self.frames is None:
                    self.frames = ChatFrames.learn(self.engine.tokenizer) or False
                if self.frames is False:
                    self.down = (f"device serves: {self.endpoint.name} takes chat messages only, and this "
                                 f"model's chat template cannot be read back into messages")
                    events.put(Notice(self.down))
                    result["device"] = True
                    return
                messages = chat_messages(self.engine.tokenizer, self.frames, ids)
                if messages is None:   # a continued answer, or a prompt not built by the chat template
                    result["device"] = True
                    return
            st = self.state
            st.lengths = (st.lengths + [len(ids)])[-2000:]
            fit = st.server(self.endpoint.name)
            policy = make_policy(self.policy_name, b=self.budget, lengths=st.lengths, device=st.device,
                                 server=fit, prices=self.prices)
            plan = policy.plan(len(ids), random.Random())
            if plan.server_at is None and plan.device_at == 0.0:
                result["device"] = True       # the device alone: the engine's own request, panels and all
                save_state(self.state_path, st)
                return
            live = Live(self.engine, client, self.caps, st.device, fit, self.prices, read_rate=self.read_rate,
                        expected_out=max_new, device_options=options, temperature=temperature)
            # migration is DiSCo's; the server and random policies keep an answer where it started
            # (as `hexa bench --route` runs them), unless that side fails mid-answer
            out = await live.serve(ids, plan, max_new, on_text=lambda s: events.put(Text(s)), stop=cancel,
                                   messages=messages, migrate=policy.name.startswith("disco"))
            if out.served_by.startswith("server"):
                st.observe(self.endpoint.name, out.ttft)
            if out.note and out.note != "cancelled":
                events.put(Notice(out.note))
            names = {"device": "device", "server": self.endpoint.name}
            parts = " → ".join(f"{names.get(e, e)} {n} tok" for e, n in out.parts if e)
            how = f" (migrated by {out.handover})" if out.migrated else ""
            events.put(Notice(f"served by {parts}{how}; {policy.name} policy"))
            token_ids = tuple(self.engine.encode(out.text))
            total_ms = (time.perf_counter() - t0) * 1000
            decode_ms = max(total_ms - out.ttft * 1000, 1e-6)
            events.put(Done("cancelled" if out.note == "cancelled" else
                            ("max_tokens" if len(token_ids) >= max_new else "eos"),
                            out.text, token_ids, len(ids), len(token_ids), out.ttft * 1000, 0.0, 0.0, decode_ms,
                            len(token_ids) / decode_ms * 1000, decode_ms / max(len(token_ids), 1), 0, 0.0,
                            method=options.get("method", "vanilla"), served_by=parts + how))
            save_state(self.state_path, st)
        finally:
            await client.aclose()
            events.put(None)
