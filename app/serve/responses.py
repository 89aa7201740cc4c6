"""Engine events as OpenAI responses: a whole answer, or SSE chunks carrying hexa's figures.

Every streamed chunk has an extra ``hexa`` field (OpenAI clients keep unknown fields: the Python
client's ``chunk.model_extra["hexa"]``): ``prefill`` (tokens done/total/reused, ms) while the prompt
is read, ``steps`` (each decoding step since the last chunk: tokens accepted and proposed, where
each accepted token came from, draft and verify ms, tree size) with the text they produced, a
``notice`` when the engine has one, and ``done`` (the request's totals and token ids) on the last.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict
from typing import Any

from engine.events import Done, Notice, Prefill, Step, Text

FINISH = {"eos": "stop", "stop_string": "stop", "max_tokens": "length", "context_full": "length",
          "cancelled": "stop"}


def step_of(step: Step) -> dict:
    return {"accepted": step.accepted, "proposed": step.proposed, "sources": list(step.sources),
            "draft_ms": round(step.draft_ms, 3), "verify_ms": round(step.verify_ms, 3),
            "tree_size": step.tree_size, "tree_depth": step.tree_depth}


def prefill_of(p: Prefill) -> dict:
    return {"done": p.done, "total": p.total, "chunk": p.chunk, "reused": p.reused, "graph": p.graph,
            "ms": round(p.ms, 3), "switched_blocks": p.switched_blocks, "total_blocks": p.total_blocks,
            "exposed_load_ms": p.exposed_load_ms}


def done_of(done: Done) -> dict:
    out = asdict(done)
    out.pop("t", None)
    out.pop("text", None)
    out["token_ids"] = list(done.token_ids)
    return out


def usage(done: Done) -> dict:
    return {"prompt_tokens": done.prompt_tokens, "completion_tokens": done.new_tokens,
            "total_tokens": done.prompt_tokens + done.new_tokens,
            "prompt_tokens_details": {"cached_tokens": done.reused_tokens}}


class Shape:
    """One request's response shape: chat or completions, its id, model and creation time."""

    def __init__(self, chat: bool, model: str, include_usage: bool = False):
        self.chat, self.model, self.include_usage = chat, model, include_usage
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        self.created = int(time.time())

    def _head(self, chunk: bool) -> dict:
        obj = ("chat.completion" if self.chat else "text_completion") + (".chunk" if chunk and self.chat else "")
        return {"id": self.id, "object": obj, "created": self.created, "model": self.model}

    def _choice(self, text: str | None, finish: str | None, first: bool = False) -> dict:
        if not self.chat:
            return {"index": 0, "text": text or "", "finish_reason": finish, "logprobs": None}
        delta: dict[str, Any] = {"role": "assistant"} if first else {}
        if text is not None:
            delta["content"] = text
        return {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}

    def chunk(self, text: str | None, hexa: dict, finish: str | None = None, first: bool = False) -> str:
        body = self._head(True) | {"choices": [self._choice(text, finish, first)], "hexa": hexa}
        if self.include_usage:
            body["usage"] = None
        return sse(body)

    def usage_chunk(self, done: Done) -> str:
        return sse(self._head(True) | {"choices": [], "usage": usage(done)})

    def whole(self, done: Done) -> dict:
        """The non-streamed answer."""
        finish = FINISH.get(done.stop_reason, "stop")
        if self.chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": done.text}, "finish_reason": finish,
                      "logprobs": None}
        else:
            choice = {"index": 0, "text": done.text, "finish_reason": finish, "logprobs": None}
        return self._head(False) | {"choices": [choice], "usage": usage(done), "hexa": {"done": done_of(done)}}


def sse(body: dict) -> str:
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n"


class Chunker:
    """Turns one request's events into SSE chunks (steps gathered until the text they produced)."""

    def __init__(self, shape: Shape):
        self.shape = shape
        self.steps: list[dict] = []
        self.first = True

    def _out(self, text: str | None, hexa: dict, finish: str | None = None) -> str:
        if self.steps:
            hexa = {"steps": self.steps} | hexa
            self.steps = []
        first, self.first = self.first, False
        return self.shape.chunk(text if text is not None or not first else "", hexa, finish, first)

    def feed(self, event: Any) -> list[str]:
        if isinstance(event, Step):
            self.steps.append(step_of(event))
            return []
        if isinstance(event, Text):
            return [self._out(event.delta, {})]
        if isinstance(event, Prefill):
            return [self._out(None, {"prefill": prefill_of(event)})]
        if isinstance(event, Notice):
            return [self._out(None, {"notice": event.message})]
        if isinstance(event, Done):
            out = [self._out(None, {"done": done_of(event)}, FINISH.get(event.stop_reason, "stop"))]
            if self.shape.include_usage:
                out.append(self.shape.usage_chunk(event))
            return out + ["data: [DONE]\n\n"]
        return []
