"""One request served by the device and a server together: the policy's plan starts each (the
first token wins, the loser is cancelled), then the answer may migrate to the cheaper endpoint
(token ids when the server takes them and shares the vocabulary, else text cut at a whitespace
boundary) once the stream is B = r_c·t_m tokens ahead of the reader."""
from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from ..events import Done, Step, Text
from .client import Capabilities, ServerClient
from .migration import buffer_tokens, text_handover, worth_migrating
from .models import DeviceModel, Prices, ServerTTFT
from .policy import Plan
from .simulate import MIGRATION_QUANTILE


@dataclass
class Served:
    text: str = ""
    ttft: float = 0.0
    served_by: str = ""                 # "device", "server", "device+server", ...
    arrivals: list[float] = field(default_factory=list)   # one per token, seconds from the request
    migrated: bool = False
    handover: str = ""                  # "ids" | "text" when migrated
    device_in: int = 0
    server_in: int = 0
    device_out: int = 0
    server_out: int = 0
    parts: list[tuple[str, int]] = field(default_factory=list)   # (endpoint, tokens) in order
    note: str = ""                      # why the device served alone, if the server failed
    dispatched: tuple[str, ...] = ()    # the endpoints the plan started (the budget's measure)

    def cost(self, p: Prices) -> float:
        return (p.device_in * self.device_in + p.device_out * self.device_out + p.server_in * self.server_in
                + p.server_out * self.server_out)


class Live:
    def __init__(self, engine, client: ServerClient, caps: Capabilities, device: DeviceModel, fit: ServerTTFT,
                 prices: Prices, *, read_rate: float = 5.0, expected_out: float = 128.0,
                 device_options: dict | None = None, temperature: float = 0.0):
        self.engine, self.client, self.caps = engine, client, caps
        # the device's generate options (the app's method, sources, ...); a cold prefill by default,
        # so that measured TTFTs are what a new request pays
        self.device_options = dict(device_options) if device_options is not None else {"reuse": False}
        # each device run says its own ``continues`` (a hand-over's); a prompt that is itself a
        # continued answer is the router's to keep on the device (``Router.generate``)
        if self.device_options.pop("continues", 0):
            raise ValueError("a continued answer is served by the device alone, not by Live")
        self.temperature = temperature
        self.device, self.fit, self.prices = device, fit, prices
        self.read_rate, self.expected_out = read_rate, expected_out
        self._tags = 0                 # each endpoint run's tag (see _device)
        self._server_tag = 0

    # -- the two endpoints as streams of (source, tokens, text) on one queue ----------------------
    def _device(self, loop, queue, ids: list[int], max_new: int, cancel: threading.Event,
                continues: int = 0) -> threading.Thread:
        """One device request on its own thread; its events carry its tag, so that a cancelled
        run's late events are never taken for the next run's. ``continues``: the last ids are the
        answer so far (a migration to the device), fed as decoding feeds them."""
        self._tags += 1
        tag = self._tags

        def work():
            done = None
            try:
                for ev in self.engine.generate(ids, max_new_tokens=max_new, cancel=cancel, temperature=self.temperature,
                                               continues=continues, **self.device_options):
                    if isinstance(ev, Step):
                        loop.call_soon_threadsafe(queue.put_nowait, ("device", ev.accepted, "", tag))
                    elif isinstance(ev, Text):
                        loop.call_soon_threadsafe(queue.put_nowait, ("device", 0, ev.delta, tag))
                    elif isinstance(ev, Done):
                        done = ev
            except Exception as exc:  # reported as the device's end; the caller decides
                done = exc
            loop.call_soon_threadsafe(queue.put_nowait, ("device", -1, done, tag))
        t = threading.Thread(target=work, daemon=True)
        t.tag = tag
        t.start()
        return t

    async def _server(self, queue, prompt, max_new: int, delay: float, continues: int = 0) -> None:
        self._tags += 1
        tag = self._tags
        self._server_tag = tag
        await asyncio.sleep(delay)
        try:
            async for text in self.client.stream(prompt, max_new, self.temperature, continues=continues):
                # a chunk may carry several tokens (hexa serve sends a speculative step's at once):
                # counted with the device's tokenizer, exact when the vocabularies match
                queue.put_nowait(("server", max(1, len(self.engine.encode(text))), text, tag))
            queue.put_nowait(("server", -1, None, tag))
        except Exception as exc:  # noqa: BLE001 - the router falls back to the device
            queue.put_nowait(("server", -1, exc, tag))

    async def _after(self, previous, loop, queue, ids, max_new, cancel, continues: int = 0) -> threading.Thread:
        """A new device request once the previous one (cancelled) has ended: the engine serves
        one request at a time."""
        if previous is not None:
            await asyncio.to_thread(previous.join)
        return self._device(loop, queue, ids, max_new, cancel, continues)

    def _server_prompt(self, ids: list[int]):
        return ids if self.caps.handover == "ids" else self.engine.tokenizer.decode(ids, skip_special_tokens=False)

    # -- one request -------------------------------------------------------------------------------
    async def serve(self, ids: list[int], plan: Plan, max_new: int, *, migrate: bool = True,
                    force_migrate_at: int | None = None, on_text: Callable[[str], None] | None = None,
                    stop: threading.Event | None = None, messages: list[dict] | None = None) -> Served:
        """Serve one request by ``plan``; ``on_text`` hears the answer as the reader may see it
        (whole words while a text migration may still cut); ``stop`` (the user's cancel) ends it.
        A chat-only server is sent ``messages`` (the chat whose prompt is ``ids``) and is never
        handed an answer mid-way; it can still hand its own to the device."""
        if self.caps.chat and messages is None and plan.server_at is not None:
            raise ValueError("a chat-only server needs the request's messages")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        out = Served()
        t0 = time.perf_counter()
        cancel = threading.Event()
        thread: threading.Thread | None = None
        server_task: asyncio.Task | None = None
        first: dict = {}

        async def start_device(delay: float):
            nonlocal thread
            await asyncio.sleep(delay)
            if not first:
                out.device_in += len(ids)
                thread = self._device(loop, queue, ids, max_new, cancel)

        if plan.server_at is not None:
            out.server_in += len(ids) if plan.server_at == 0 else 0
            prompt = messages if self.caps.chat else self._server_prompt(ids)
            server_task = asyncio.ensure_future(self._server(queue, prompt, max_new, plan.server_at))
        starter = asyncio.ensure_future(start_device(plan.device_at)) if plan.device_at is not None else None
        current, gen_text, emitted, tokens, base = None, "", 0, 0, 0
        ended: set[str] = set()
        p = self.prices

        def emit(upto: int):
            nonlocal emitted
            if upto > emitted and on_text:
                on_text(gen_text[emitted:upto])
            emitted = max(emitted, upto)

        while True:
            if stop is not None and stop.is_set():
                out.note = out.note or "cancelled"
                break
            try:
                src, n, payload, tag = await asyncio.wait_for(queue.get(), 0.1 if stop is not None else None)
            except asyncio.TimeoutError:
                continue
            if tag != (thread.tag if src == "device" and thread is not None else
                       self._server_tag if src == "server" else -1):
                continue                                 # a cancelled run's late event
            if n == -1:
                ended.add(src)
                if src == current and src == "server" and isinstance(payload, Exception) and tokens < max_new:
                    # the server failed mid-answer (or as a migration's target): the device continues
                    out.note = f"device continued: {payload}"
                    kept = text_handover(gen_text)[0] if gen_text else ""
                    gen_text = kept
                    emit(len(kept))
                    new_ids = ids + (self.engine.encode(kept) if kept else [])
                    out.parts.append((src, tokens - base))
                    base = tokens = len(new_ids) - len(ids)
                    out.device_in += len(new_ids)
                    current, cancel = "device", threading.Event()
                    thread = await self._after(thread, loop, queue, new_ids, max_new - tokens, cancel, tokens)
                    out.served_by += "+device"
                    continue
                if src == current:
                    break
                if current is not None:
                    continue                             # the loser's end
                if isinstance(payload, Exception) and src == "server":
                    out.note = f"device served: {payload}"
                    if thread is None:                   # the server failed first: the device now
                        if starter:
                            starter.cancel()
                        out.device_in += len(ids)
                        thread = self._device(loop, queue, ids, max_new, cancel)
                        continue
                started = {"device"} if thread is not None else set()
                started |= {"server"} if server_task is not None else set()
                if ended >= started and (starter is None or starter.done()):
                    break
                continue
            if current is None:                      # the first token: the winner, the loser cancelled
                out.dispatched = tuple(x for x, on in (("device", thread is not None),
                                                       ("server", server_task is not None)) if on)
                current = src
                first["t"] = out.ttft = time.perf_counter() - t0
                out.served_by = src
                if src == "device" and server_task:
                    server_task.cancel()
                elif src == "server":
                    if starter:
                        starter.cancel()
                    cancel.set()
            if src != current:
                continue
            now = time.perf_counter() - t0
            out.arrivals += [now] * n
            tokens += n
            if src == "device":
                out.device_out += n
            else:
                out.server_out += n
            gen_text += payload
            # while a text migration may still cut, show only whole words
            emit(len(text_handover(gen_text)[0]) if migrate else len(gen_text))
            if not migrate or out.migrated or n == 0:
                continue
            other = "server" if src == "device" else "device"
            if other == "server" and self.caps.chat:
                continue                                 # a chat API cannot continue an answer
            gap = (p.device_out - p.server_out) if src == "device" else (p.server_out - p.device_out)
            t_m = (self.fit.quantile(MIGRATION_QUANTILE) if other == "server"
                   else self.device.ttft(len(ids) + tokens))
            read = 1 + (now - out.ttft) * self.read_rate
            due = (tokens >= force_migrate_at if force_migrate_at is not None else
                   tokens - read >= buffer_tokens(self.read_rate, t_m)
                   and worth_migrating(gap, self.expected_out - tokens,
                                       (p.server_in if other == "server" else p.device_in) * (len(ids) + tokens)))
            if not due or tokens >= max_new:
                continue
            # hand over: stop the source, give the target prompt + what was generated
            if src == "device":
                cancel.set()
                while True:                                  # the device's exact ids so far
                    s2, n2, pl2, t2 = await queue.get()
                    if s2 != "device" or t2 != thread.tag:
                        continue
                    if n2 == -1:
                        break
                done = pl2 if isinstance(pl2, Done) else None
                if done is None or done.stop_reason != "cancelled":   # it finished meanwhile
                    gen_text = done.text if done is not None else gen_text
                    break
                gen_ids = list(done.token_ids)
                if self.caps.handover == "ids":   # the answer's ids marked as such (hexa serve)
                    kept, prompt, continues = done.text, ids + gen_ids, len(gen_ids)
                else:
                    kept, continues = text_handover(done.text)[0], 0
                    prompt = self._server_prompt(ids) + kept
                gen_text = kept
                emit(len(kept))
                kept_tokens = len(self.engine.encode(kept)) if self.caps.handover != "ids" else len(gen_ids)
                out.server_in += len(ids) + kept_tokens
                current = "server"
                cancel = threading.Event()
                server_task = asyncio.ensure_future(self._server(queue, prompt, max_new - kept_tokens, 0.0,
                                                                 continues))
            else:
                server_task.cancel()
                kept = text_handover(gen_text)[0]
                gen_text = kept
                emit(len(kept))
                new_ids = ids + self.engine.encode(kept)
                kept_tokens = len(new_ids) - len(ids)
                out.device_in += len(new_ids)
                current = "device"
                cancel = threading.Event()
                thread = await self._after(thread, loop, queue, new_ids, max_new - kept_tokens, cancel, kept_tokens)
            out.parts.append((src, kept_tokens))
            out.migrated, out.handover = True, (self.caps.handover if src == "device" else "text")
            out.served_by += "+" + current
            tokens = base = kept_tokens
        emit(len(gen_text))
        if server_task:
            server_task.cancel()
            await asyncio.gather(server_task, return_exceptions=True)
        if starter:
            starter.cancel()
        cancel.set()
        if thread:
            await asyncio.to_thread(thread.join)
        out.parts.append((current or "", tokens - base))
        out.text = gen_text
        return out
