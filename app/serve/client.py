"""``RemoteEngine``: what the app uses of ``Engine``, served by a ``hexa serve`` process.

The app's agents call ``generate`` (prompt ids, method, drafting sources, cancel, keep_answer),
``chat_ids``/``encode``/``decode`` (prompt building and token counts, many calls a request) and
``index_response``. Tokenizing stays in this process, from the served model's own tokenizer files
(the server says where they are): an HTTP round trip per ``chat_ids`` would slow prompt fitting.
Events are rebuilt from the stream's ``hexa`` field, so the live panels read what they read
in-process; their times are this process's arrival times (the figures are the engine's own).
"""
from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

import httpx

from agents.common import cancelled_done
from engine.errors import EngineError
from engine.events import Done, Event, Notice, Prefill, Step, Text

DONE_FIELDS = set(Done.__dataclass_fields__) - {"t"}


class RemoteEngine:
    def __init__(self, url: str, api_key: str | None = None, timeout: float = 30.0):
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # no read timeout on streams: a request may wait behind others in the server's queue
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout, read=None))
        try:
            info = self.http.get("/hexa/status").json()
        except (httpx.HTTPError, ValueError) as exc:
            raise EngineError(f"no hexa server at {self.url}: {exc.__class__.__name__}") from None
        if info.get("error") or info.get("loading"):
            raise EngineError(f"the hexa server at {self.url} has no model ready: {info.get('error') or 'loading'}")
        self.model_name: str = info["model"]
        self.backend_name: str = info["backend"]
        self.context_window: int = info["context_window"]
        self.method: str = info["method"]
        from engine.model.tokenizer import ChatTokenizer, TokenText

        try:
            self.tokenizer = ChatTokenizer(Path(info["folder"]))
        except OSError:
            raise EngineError(f"the hexa server at {self.url} runs on another machine: its tokenizer "
                              f"({info['folder']}) is not readable here") from None
        self._plain = TokenText(self.tokenizer)
        from engine.heap import release_freed

        release_freed()       # a large vocabulary's loading peak (Gemma's: ~200 MB) goes back

    # ---- text <-> tokens (the Engine's own methods, on the served model's tokenizer)
    def encode(self, text: str) -> list[int]:
        return self._plain.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self._plain.decode(ids)

    def chat_ids(self, messages: list[dict]) -> list[int]:
        return self._plain.chat_ids(messages)

    def index_response(self, token_ids: Sequence[int]) -> None:
        if token_ids:
            self._post("/hexa/index", {"token_ids": list(token_ids)})

    def constraint(self, grammar) -> "RemoteConstraint":
        """The grammar, to send with each request (the server compiles it against its vocabulary)."""
        return RemoteConstraint(grammar)

    def close(self) -> None:
        self.http.close()

    # ---- generation
    def generate(self, prompt, *, max_new_tokens: int = 256, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int | None = None, stop: Sequence[str] = (), method: str = "vanilla",
                 sources: Sequence[Sequence[int]] = (), cancel: threading.Event | None = None,
                 chunk_size: int = 256, constraint=None, reuse: bool = True,
                 keep_answer: bool = False, top_k: int = 0, min_p: float = 0.0,
                 penalties=None, continues: int = 0) -> Iterator[Event]:
        if isinstance(prompt, str):
            ids = self.chat_ids([{"role": "user", "content": prompt}])
        elif prompt and isinstance(prompt[0], dict):
            ids = self.chat_ids(list(prompt))
        else:
            ids = list(prompt)
        rid = uuid.uuid4().hex
        body = {"model": self.model_name, "prompt": ids, "max_tokens": max_new_tokens, "temperature": temperature,
                "top_p": top_p, "seed": seed, "stop": list(stop) or None, "stream": True,
                # the app indexes answers itself (index_response), as with an engine in process
                "hexa": {"method": method, "sources": [list(s) for s in sources], "keep_answer": keep_answer,
                         "reuse": reuse, "index": False, "request_id": rid, "continues": max(0, continues)}}
        if constraint is not None:
            body["hexa"]["grammar"] = grammar_json(getattr(constraint, "grammar", constraint))
        body.update(top_k=top_k, min_p=min_p)
        if penalties is not None:   # llama.cpp server's names (app/serve/schemas.py)
            body.update(frequency_penalty=penalties.frequency_penalty, presence_penalty=penalties.presence_penalty,
                        repeat_penalty=penalties.repeat_penalty, repeat_last_n=penalties.repeat_last_n,
                        dry_multiplier=penalties.dry_multiplier, dry_base=penalties.dry_base,
                        dry_allowed_length=penalties.dry_allowed_length, dry_penalty_last_n=penalties.dry_last_n)
            body["hexa"]["penalize_prompt"] = penalties.penalize_prompt
        return self._stream(body, rid, cancel)

    def _stream(self, body: dict, rid: str, cancel: threading.Event | None) -> Iterator[Event]:
        finished = threading.Event()
        if cancel is not None:     # the server stops it and still sends its figures
            threading.Thread(target=self._watch, args=(cancel, finished, rid), daemon=True,
                             name="hexa-remote-cancel").start()
        text: list[str] = []
        try:
            with self.http.stream("POST", "/v1/completions", json=body) as response:
                if response.status_code != 200:
                    response.read()
                    if response.status_code == 499:
                        yield cancelled_done(body["hexa"]["method"])
                        return
                    raise EngineError(_error_line(response))
                for line in response.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    if "error" in chunk:
                        raise EngineError(chunk["error"].get("message", "the server failed"))
                    yield from _events(chunk, text)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        finally:
            finished.set()

    def _watch(self, cancel: threading.Event, finished: threading.Event, rid: str) -> None:
        while not finished.is_set():
            if cancel.wait(0.05):
                try:
                    self._post(f"/hexa/cancel/{rid}", {})
                except EngineError:
                    pass
                return

    def _unreachable(self, exc: httpx.HTTPError) -> EngineError:
        """The error for a server that stopped answering mid-request (ChildEngine: how it ended)."""
        return EngineError(f"the hexa server at {self.url} failed: {exc.__class__.__name__}")

    def _post(self, path: str, body: dict) -> dict:
        try:
            r = self.http.post(path, json=body)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        if r.status_code != 200:
            raise EngineError(_error_line(r))
        return r.json()


class RemoteConstraint:
    """What ``RemoteEngine.constraint`` returns: the grammar the server compiles for each request."""

    def __init__(self, grammar) -> None:
        self.grammar = grammar


def grammar_json(grammar) -> list[list]:
    """A ``Grammar`` as the ``hexa.grammar`` request field: strings, and ``{"free", "exclude"}``."""
    return [[seg if isinstance(seg, str) else {"free": seg.max_chars, "exclude": seg.exclude} for seg in alt]
            for alt in grammar.alternatives]


def _events(chunk: dict, text: list[str]) -> Iterator[Event]:
    hexa = chunk.get("hexa") or {}
    p = hexa.get("prefill")
    if p:
        yield Prefill(p["done"], p["total"], p["chunk"], p["graph"], p["switched_blocks"], p["total_blocks"],
                      p["exposed_load_ms"], p["ms"], reused=p["reused"])
    if hexa.get("notice"):
        yield Notice(hexa["notice"])
    for s in hexa.get("steps", ()):
        yield Step(s["proposed"], s["accepted"], tuple(s["sources"]), s["draft_ms"], s["verify_ms"],
                   s["tree_size"], s["tree_depth"])
    delta = chunk["choices"][0]["text"] if chunk.get("choices") else ""
    if delta:
        text.append(delta)
        yield Text(delta)
    done = hexa.get("done")
    if done:
        fields = {k: v for k, v in done.items() if k in DONE_FIELDS}
        fields["token_ids"] = tuple(fields.get("token_ids", ()))
        yield Done(text="".join(text), **{k: v for k, v in fields.items() if k != "text"})


def _error_line(response: httpx.Response) -> str:
    try:
        return response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return f"the hexa server answered HTTP {response.status_code}"
