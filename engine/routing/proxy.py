"""A delay proxy in front of a real server (this kernel has no netem): a TCP relay that adds a
one-way network latency to every chunk each way, and holds each response's first bytes until a
TTFT drawn from a distribution has passed since its request (the client sees max(real, replayed)
plus the network). A new request on a kept-alive connection draws a new TTFT."""
from __future__ import annotations

import asyncio
import random
import time
from typing import Callable


class DelayProxy:
    def __init__(self, upstream_host: str, upstream_port: int, *, latency_s: float = 0.0,
                 ttft: Callable[[random.Random], float] | None = None, seed: int = 0):
        self.upstream = (upstream_host, upstream_port)
        self.latency = latency_s
        self.ttft = ttft
        self.rng = random.Random(seed)
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self.replayed: list[float] = []        # the TTFTs drawn, in order
        self.open = 0                          # client connections open now (a cancelled race closes its own)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        self.server = await asyncio.start_server(self._client, host, port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self.server:
            self.server.close()
            await self.server.wait_closed()

    async def _client(self, c_reader, c_writer) -> None:
        try:
            u_reader, u_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            c_writer.close()
            return
        self.open += 1
        state = {"deadline": 0.0, "answering": True, "shift": self.latency}

        def request_starts() -> float:
            if state["answering"]:               # a new request: draw its TTFT
                state["answering"] = False
                draw = self.ttft(self.rng) if self.ttft else 0.0
                self.replayed.append(draw)
                state["deadline"] = time.perf_counter() + draw + 2 * self.latency
            return time.perf_counter() + self.latency

        def answer_arrives() -> float:
            now = time.perf_counter()
            if not state["answering"]:           # the response's first bytes: hold to the deadline,
                state["answering"] = True        # and the rest by as much (its pace is the server's)
                state["shift"] = max(state["deadline"] - now, self.latency)
            return now + state["shift"]

        async def pipe(reader, writer, release_at) -> None:
            """Each chunk leaves at its release time, in order (latency, not a rate limit)."""
            queue: asyncio.Queue = asyncio.Queue()

            async def send():
                while (item := await queue.get()) is not None:
                    when, data = item
                    await asyncio.sleep(max(0.0, when - time.perf_counter()))
                    writer.write(data)
                    await writer.drain()
                writer.close()

            sender = asyncio.ensure_future(send())
            try:
                while data := await reader.read(65536):
                    queue.put_nowait((release_at(), data))
            finally:
                queue.put_nowait(None)
                await sender

        up = pipe(c_reader, u_writer, request_starts)
        down = pipe(u_reader, c_writer, answer_arrives)
        tasks = [asyncio.ensure_future(up), asyncio.ensure_future(down)]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.open -= 1
