"""An OpenAI-compatible endpoint (llama-server, vLLM, ollama, llama-cpp-python, hexa serve, a cloud
API): streaming completions over httpx, its tokenizer probed to decide how a migration is sent."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Sequence

import httpx

from ..errors import EngineError
from .migration import PROBES, same_vocabulary
from .models import Prices


@dataclass(frozen=True)
class Endpoint:
    name: str
    url: str                   # the OpenAI base URL, e.g. http://127.0.0.1:8080/v1
    model: str = ""
    api_key: str = ""          # the value (the app reads it from the environment variable the user names)
    price_in: float = 0.0
    price_out: float = 0.0
    api: str = "auto"          # "completions", "chat" (messages only: most cloud APIs) or "auto" (probed)

    @property
    def root(self) -> str:
        """The server's root (llama-server and vLLM serve /tokenize there, beside /v1)."""
        u = self.url.rstrip("/")
        return u[:-3] if u.endswith("/v1") else u


@dataclass(frozen=True)
class Capabilities:
    same_vocab: bool           # the server tokenizes like the device
    ids: bool                  # /v1/completions takes a prompt of token ids
    llama_cpp: bool = False    # a llama.cpp server (its completions default to repeat_penalty 1.1)
    chat: bool = False         # it takes messages only (/v1/chat/completions): no raw prompt, and
                               # no answer can be handed to it mid-way (a chat API cannot continue one)
    hexa: bool = False         # hexa serve: an answer handed over by ids is marked as such (hexa.continues)

    @property
    def handover(self) -> str:
        return "ids" if self.same_vocab and self.ids and not self.chat else "text"


def prices(device_in: float, device_out: float, ep: Endpoint) -> Prices:
    return Prices(device_in, device_out, ep.price_in, ep.price_out)


class ServerClient:
    def __init__(self, endpoint: Endpoint, timeout: float = 60.0, transport: httpx.AsyncBaseTransport | None = None):
        self.ep = endpoint
        self.extra: dict = {}          # set from the probe: what greedy decoding needs on this server
        self.model = endpoint.model    # the OpenAI API requires one: the server's first, if not configured
        self.chat = endpoint.api == "chat"   # prompts go as messages (the probe may find it out)
        self.hexa = False              # the server is hexa serve (the probe finds it out)
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        self.http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout, connect=5.0),
                                      transport=transport)

    async def aclose(self) -> None:
        await self.http.aclose()

    def _fail(self, exc: Exception) -> EngineError:
        return EngineError(f"server {self.ep.name} at {self.ep.url}: {exc.__class__.__name__}"
                           f"{': ' + str(exc).splitlines()[0] if str(exc) else ''}")

    async def stream(self, prompt: str | Sequence[int] | list[dict], max_tokens: int, temperature: float = 0.0,
                     stop: Sequence[str] = (), continues: int = 0) -> AsyncIterator[str]:
        """Text deltas of one streamed completion: /v1/completions for a prompt (text or ids),
        /v1/chat/completions for messages. Closing the iterator closes the connection (the server
        sees the client go and stops the request). ``continues``: the ids' last ones are the
        answer so far (sent to hexa serve only: other servers have no such field)."""
        chat = isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], dict)
        body: dict = {"max_tokens": max_tokens, "temperature": temperature, "stream": True}
        if chat:
            body["messages"] = prompt
        else:
            body["prompt"] = prompt if isinstance(prompt, str) else list(prompt)
        if self.model:
            body["model"] = self.model
        if stop:
            body["stop"] = list(stop)
        body.update(self.extra)
        if continues and self.hexa and not isinstance(prompt, str) and not chat:
            body["hexa"] = {"continues": continues}
        path = "/chat/completions" if chat else "/completions"
        try:
            async with self.http.stream("POST", self.ep.url.rstrip("/") + path, json=body) as r:
                if r.status_code != 200:
                    text = (await r.aread()).decode(errors="replace")[:200]
                    raise EngineError(f"server {self.ep.name} answered {r.status_code}: {text}")
                async for line in r.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        choices = json.loads(data)["choices"]
                        if not choices:                  # a usage-only chunk
                            continue
                        choice = choices[0]
                        piece = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                        raise EngineError(f"server {self.ep.name} sent a chunk that is not a completion") from None
                    if piece:
                        yield piece
        except httpx.HTTPError as exc:
            raise self._fail(exc) from None

    async def tokenize(self, text: str) -> list[int] | None:
        """The server's ids for ``text``, if it has a tokenize endpoint: llama-server and vLLM
        (/tokenize), llama-cpp-python (/extras/tokenize); None otherwise."""
        body = {"content": text, "prompt": text, "input": text, "add_special": False,
                "add_special_tokens": False}
        if self.model:
            body["model"] = self.model
        for path in ("/tokenize", "/extras/tokenize"):
            try:
                r = await self.http.post(self.ep.root + path, json=body)
            except httpx.HTTPError:
                return None
            if r.status_code == 200:
                try:
                    return [int(t) for t in r.json()["tokens"]]
                except (ValueError, KeyError, TypeError):
                    return None
        return None

    async def probe(self, encode: Callable[[str], list[int]]) -> Capabilities:
        """Does the server share the device's vocabulary, take token-id prompts, or take messages
        only (``api = "auto"``: a one-token completion it refuses while a chat one works)?"""
        if not self.model:
            try:
                r = await self.http.get(self.ep.url.rstrip("/") + "/models")
                self.model = str(r.json()["data"][0]["id"]) if r.status_code == 200 else ""
            except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
                self.model = ""
        if self.ep.api == "auto":
            self.chat = not await self._takes("/completions", {"prompt": "Hello"}) and \
                await self._takes("/chat/completions", {"messages": [{"role": "user", "content": "Hello"}]})
        if self.chat:
            return Capabilities(False, False, False, chat=True)
        remote = [await self.tokenize(p) for p in PROBES]
        llama = remote[0] is not None and await self._answers("/extras/tokenize")
        same = all(r is not None for r in remote) and same_vocabulary([encode(p) for p in PROBES], remote)
        ids = same and await self._takes("/completions", {"prompt": encode("Hello")})
        hexa = ids and await self._serves("/hexa/status")
        caps = Capabilities(same, ids, llama, hexa=hexa)
        self.adopt(caps, self.model)
        return caps

    def adopt(self, caps: Capabilities, model: str) -> None:
        """What an earlier probe found, for this client's requests (a router probes once and
        opens a client per request)."""
        self.model, self.chat = model or self.model, caps.chat or self.chat
        self.hexa = caps.hexa
        if caps.llama_cpp:
            # llama-cpp-python's completions apply repeat_penalty 1.1 unless told: with it, its
            # "greedy" answer is not the model's greedy answer (nor the device's)
            self.extra = {"repeat_penalty": 1.0}

    async def _takes(self, path: str, body: dict) -> bool:
        """Does a one-token greedy request to ``path`` succeed?"""
        body = body | {"max_tokens": 1, "temperature": 0.0} | ({"model": self.model} if self.model else {})
        try:
            return (await self.http.post(self.ep.url.rstrip("/") + path, json=body)).status_code == 200
        except httpx.HTTPError:
            return False

    async def _serves(self, path: str) -> bool:
        """Does a GET of ``path`` beside /v1 answer 200 with JSON?"""
        try:
            r = await self.http.get(self.ep.root + path)
            return r.status_code == 200 and isinstance(r.json(), dict)
        except (httpx.HTTPError, ValueError):
            return False

    async def _answers(self, path: str) -> bool:
        try:
            return (await self.http.post(self.ep.root + path, json={"input": "a"})).status_code == 200
        except httpx.HTTPError:
            return False

    async def ttft(self, prompt: str, max_tokens: int = 1) -> float:
        """One request's time to its first streamed text (an observation for F)."""
        t0 = time.perf_counter()
        async for _ in self.stream([{"role": "user", "content": prompt}] if self.chat else prompt, max_tokens):
            return time.perf_counter() - t0
        return time.perf_counter() - t0
