"""The app factory: hexa's engine behind the OpenAI routes (``/v1/models``, ``/v1/chat/completions``,
``/v1/completions``), plus ``/health`` and ``/hexa/status``.

The engine loads on the engine thread after the server is listening: requests meanwhile get 503.
A client that disconnects (while waiting or while its answer streams) cancels its request.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from . import jobs
from .errors import ApiError, install
from .queue import END, WAITING, DeviceQueue, QueueFull, Ticket
from .responses import Chunker, Shape, sse
from .schemas import ChatRequest, CompletionRequest, ValidationError, first_problem

log = logging.getLogger("hexa.serve")
POLL_S = 0.2       # how often a request with nothing to send checks that its client is still there


@dataclass
class State:
    settings: Any
    queue: DeviceQueue
    api_key: str | None = None
    engine: Any = None
    error: str | None = None                 # why loading failed
    recent: deque = field(default_factory=lambda: deque(maxlen=64))   # the last requests' ends
    started: float = field(default_factory=time.time)
    tickets: dict = field(default_factory=dict)   # request_id -> Ticket, while it runs

    def ready(self) -> Any:
        if self.engine is not None:
            return self.engine
        if self.error is not None:
            raise ApiError(503, f"the model failed to load: {self.error}", code="model_load_failed")
        raise ApiError(503, "the model is loading; retry shortly", code="model_loading", headers={"Retry-After": "1"})

    def finished(self, done) -> None:
        """Engine thread: one request ended (``done`` None: it failed or never started)."""
        entry = {"stop_reason": "failed"} if done is None else {
            "stop_reason": done.stop_reason, "prompt_tokens": done.prompt_tokens, "reused_tokens": done.reused_tokens,
            "new_tokens": done.new_tokens, "decode_tok_s": round(done.decode_tok_s, 1), "method": done.method}
        self.recent.append(entry | {"t": time.time()})


class EngineStream(StreamingResponse):
    """An SSE answer whose request is cancelled whenever the response ends early (the client left)."""

    def __init__(self, content, ticket: Ticket):
        super().__init__(content, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        self.ticket = ticket

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.ticket.abandon()


def create_app(load: Callable[[], Any], settings: Any, api_key: str | None = None,
               on_load: Callable[[str | None], None] | None = None,
               on_internal: Callable[[BaseException], str] | None = None) -> FastAPI:
    """``load()`` builds the engine (run on the engine thread once the server is up); ``on_load``
    hears None when it is ready, else the one-line reason it failed. ``api_key``: clients must
    send it as a bearer token."""
    state = State(settings, DeviceQueue(settings.serve_queue), api_key)

    async def start_loading() -> None:
        try:
            state.engine = await state.queue.submit(load)
            message = None
        except Exception as exc:  # the server keeps answering, 503 with the reason
            state.error = message = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
        if on_load is not None:
            on_load(message)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        task = asyncio.create_task(start_loading())
        yield
        task.cancel()
        state.queue.close()

    app = FastAPI(title="hexa", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.hexa = state
    install(app, on_internal or _internal)

    async def authorized(request: Request) -> None:
        if state.api_key is None:
            return
        given = request.headers.get("authorization", "")
        token = given[7:].strip() if given[:7].lower() == "bearer " else ""
        if not hmac.compare_digest(token.encode(), state.api_key.encode()):
            raise ApiError(401, "missing or wrong API key (send it as 'Authorization: Bearer KEY')",
                           code="invalid_api_key")

    auth = [Depends(authorized)]

    @app.get("/health")
    async def health():
        state.ready()
        return {"status": "ok"}

    @app.get("/v1/models", dependencies=auth)
    async def models():
        return {"object": "list", "data": [_model_card(state.ready(), state.started)]}

    @app.get("/v1/models/{model_id:path}", dependencies=auth)
    async def model(model_id: str):
        engine = state.ready()
        if model_id != engine.model_name:
            raise _unknown_model(model_id, engine)
        return _model_card(engine, state.started)

    @app.get("/hexa/status", dependencies=auth)
    async def status():
        engine = state.engine
        info = {} if engine is None else {
            "model": engine.model_name, "backend": engine.backend_name, "context_window": engine.context_window,
            "folder": str(engine.folder), "method": state.settings.method,
            "history_drafting": state.settings.history_drafting}
        return {"loading": engine is None and state.error is None, "error": state.error, **info,
                "queue": state.queue.status(), "recent": list(state.recent)}

    @app.post("/hexa/cancel/{request_id}", dependencies=auth)
    async def cancel(request_id: str):
        """Stop a request by the ``hexa.request_id`` it was sent with: it ends with its ``done``
        figures (stop_reason "cancelled"), which a client that just disconnects does not get."""
        ticket = state.tickets.get(request_id)
        if ticket is not None:
            ticket.cancel.set()
        return {"cancelled": ticket is not None}

    @app.post("/hexa/index", dependencies=auth)
    async def index(request: Request):
        """Keep token ids as a drafting source (``{"token_ids": [...]}``), between requests."""
        engine = state.ready()
        ids = _token_ids((await _parse_json(request)).get("token_ids"), engine, "token_ids")
        await state.queue.submit(lambda: engine.index_response(ids))
        return {"indexed": len(ids)}

    @app.post("/tokenize", dependencies=auth)
    async def tokenize(request: Request):
        """llama-server's ``/tokenize`` (``{"content": text}`` -> ``{"tokens": [...]}``): a router
        that finds the same ids here as on its device hands answers over as token ids."""
        engine = state.ready()
        text = (await _parse_json(request)).get("content")
        if not isinstance(text, str):
            raise ApiError(400, "content: the text to tokenize is needed", "content")
        return {"tokens": engine.encode(text)}

    @app.post("/detokenize", dependencies=auth)
    async def detokenize(request: Request):
        engine = state.ready()
        ids = _token_ids((await _parse_json(request)).get("tokens"), engine, "tokens")
        return {"content": engine.tokenizer.decode(ids, skip_special_tokens=False)}

    @app.post("/v1/chat/completions", dependencies=auth)
    async def chat(request: Request):
        return await serve(request, ChatRequest)

    @app.post("/v1/completions", dependencies=auth)
    async def completions(request: Request):
        return await serve(request, CompletionRequest)

    async def serve(request: Request, kind: type):
        engine = state.ready()
        req = await _parse(request, kind)
        if req.model != engine.model_name:
            raise _unknown_model(req.model, engine)
        gen = jobs.plan(req, engine, state.settings)
        try:
            ticket = state.queue.admit()
        except QueueFull as exc:
            raise ApiError(429, f"the device is busy: {exc}; retry shortly", code="queue_full",
                           headers={"Retry-After": "1"}) from None
        try:
            ticket.start(partial(_work, engine, gen, state.finished))
        except BaseException:
            ticket.release()
            raise
        rid = req.hexa.request_id
        if rid is not None:
            state.tickets[rid] = ticket
            ticket.on_release = lambda: state.tickets.pop(rid, None)
        first = await _next(ticket, request)
        if first is None:          # the client left while waiting
            return JSONResponse({}, status_code=499)
        if isinstance(first, jobs.Failed):
            raise ApiError(first.status, first.message)
        shape = Shape(kind is ChatRequest, engine.model_name,
                      include_usage=bool(req.stream_options and req.stream_options.include_usage))
        if req.stream:
            return EngineStream(_chunks(first, ticket, request, Chunker(shape)), ticket)
        return await _whole(first, ticket, request, shape)

    return app


def _work(engine, gen, finished, cancel, emit) -> None:
    jobs.run(engine, gen, cancel, emit, finished)


async def _next(ticket: Ticket, request: Request) -> Any:
    """The job's next item, or None once the client has disconnected (the job is then cancelled).
    The client is checked every ``POLL_S`` also while items flow: a request waiting for a whole
    answer sends nothing until the end, and would otherwise decode for a client long gone."""
    while True:
        item = await ticket.next(POLL_S)
        now = time.monotonic()
        if item is WAITING or now - ticket.checked >= POLL_S:
            ticket.checked = now
            if await request.is_disconnected():
                ticket.abandon()
                return None
        if item is not WAITING:
            return item


async def _chunks(item: Any, ticket: Ticket, request: Request, chunker: Chunker):
    """SSE text for the job's items: a batch's chunks leave in one write."""
    while item is not END and item is not None:
        out: list[str] = []
        for one in [item, *ticket.ready()]:
            if one is END:
                break
            if isinstance(one, jobs.Failed):   # the status line is sent: the error goes in the stream
                out.append(sse({"error": {"message": one.message, "type": "server_error", "param": None,
                                          "code": None}}))
                yield "".join(out)
                return
            out.extend(chunker.feed(one))
        else:
            if out:
                yield "".join(out)
            item = await _next(ticket, request)
            continue
        if out:
            yield "".join(out)
        return


async def _whole(item: Any, ticket: Ticket, request: Request, shape: Shape):
    from engine.events import Done

    done = None
    while item is not END:
        if item is None:
            return JSONResponse({}, status_code=499)
        if isinstance(item, jobs.Failed):
            raise ApiError(item.status, item.message)
        if isinstance(item, Done):
            done = item
        item = await _next(ticket, request)
    if done is None:
        raise ApiError(500, "internal error: the request ended without an answer")
    return shape.whole(done)


async def _parse(request: Request, kind: type):
    body = await _parse_json(request)
    try:
        return kind.model_validate(body)
    except ValidationError as exc:
        message, param = first_problem(exc)
        raise ApiError(400, message, param) from None


async def _parse_json(request: Request) -> dict:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, f"the request body is not valid JSON ({exc.__class__.__name__})") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _token_ids(value, engine, field: str) -> list[int]:
    if not isinstance(value, list) or not all(type(t) is int and 0 <= t < engine.model.config.vocab_size
                                              for t in value):
        raise ApiError(400, f"{field}: a list of token ids is needed", field)
    return value


def _model_card(engine, created: float) -> dict:
    return {"id": engine.model_name, "object": "model", "created": int(created), "owned_by": "hexa"}


def _unknown_model(name: str, engine) -> ApiError:
    return ApiError(404, f"the model {name!r} does not exist (this server has {engine.model_name!r})", "model",
                    "model_not_found")


def _internal(exc: BaseException) -> str:
    log.error("internal error", exc_info=exc)
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"internal error: {exc.__class__.__name__}: {first}"
