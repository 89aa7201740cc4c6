"""What one HTTP request asks of the engine, checked before it is queued, and the job that runs
it on the engine thread."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from engine.errors import EngineError
from engine.events import Done
from engine.methods import METHODS

from .errors import ApiError
from .queue import Emit
from .schemas import ChatRequest, CompletionRequest

log = logging.getLogger("hexa.serve")


@dataclass
class Generation:
    ids: list[int]
    max_new_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop: list[str]
    method: str
    sources: list[list[int]] = field(default_factory=list)
    keep_answer: bool = False
    reuse: bool = True
    index: bool = True            # keep the finished answer as a drafting source
    grammar: Any = None           # an engine.decoding.grammar.Grammar the answer must follow
    penalties: Any = None         # engine.decoding.penalties.Penalties, or None
    top_k: int = 0
    min_p: float = 0.0
    continues: int = 0            # the prompt's last ids are the answer so far


@dataclass(frozen=True)
class Failed:
    """The job ended with an error instead of ``Done`` (``status`` 400: the request's fault)."""
    status: int
    message: str


def plan(req: ChatRequest | CompletionRequest, engine: Any, settings: Any) -> Generation:
    """The engine request for ``req`` (tokenized here), or ApiError (400) saying what is wrong."""
    opts = req.hexa
    method = opts.method or settings.method
    if method not in METHODS:
        raise ApiError(400, f"hexa.method: unknown method {method!r} (known: {', '.join(METHODS)})", "hexa.method")
    try:
        if isinstance(req, ChatRequest):
            ids = engine.chat_ids([{"role": "system" if m.role == "developer" else m.role, "content": m.text()}
                                   for m in req.messages])
        else:
            prompt = req.single()
            ids = engine.encode(prompt) if isinstance(prompt, str) else list(prompt)
    except ValueError as exc:
        raise ApiError(400, str(exc), "prompt") from None
    except EngineError as exc:
        raise ApiError(400, str(exc), "messages") from None
    vocab = engine.model.config.vocab_size
    if not ids:
        raise ApiError(400, "prompt: empty", "prompt")
    if any(not 0 <= t < vocab for t in ids) or any(not 0 <= t < vocab for s in opts.sources for t in s):
        raise ApiError(400, f"token ids must be in [0, {vocab})", "prompt")
    if opts.continues >= len(ids):
        raise ApiError(400, f"hexa.continues: {opts.continues} answer ids leave no prompt before them "
                       f"(the prompt has {len(ids)})", "hexa.continues")
    window = engine.context_window
    # the answer gets the room the prompt leaves, so the engine never cuts a prompt sent over HTTP
    room = window - len(ids)
    if room < 1:
        raise ApiError(400, f"the prompt has {len(ids)} tokens: the context window is {window}", "messages"
                       if isinstance(req, ChatRequest) else "prompt", "context_length_exceeded")
    grammar = None
    if opts.grammar is not None:
        from engine.decoding.grammar import Free, Grammar

        try:
            grammar = Grammar([[seg if isinstance(seg, str) else Free(seg.free, seg.exclude) for seg in alt]
                               for alt in opts.grammar])
        except ValueError as exc:
            raise ApiError(400, f"hexa.grammar: {exc}", "hexa.grammar") from None
    wanted = req.wanted_tokens() or settings.max_tokens
    chat = isinstance(req, ChatRequest)
    penalties = _penalties(req)
    return Generation(
        ids=ids, max_new_tokens=min(wanted, room),
        temperature=settings.temperature if req.temperature is None else req.temperature,
        top_p=settings.top_p if req.top_p is None else req.top_p, seed=req.seed, stop=req.stops(),
        method=method, sources=opts.sources,
        # a chat client sends the whole conversation again with the next message: keeping the
        # answer's KV lets that prompt reuse all of it (the app does the same)
        keep_answer=chat if opts.keep_answer is None else opts.keep_answer, reuse=opts.reuse,
        index=settings.history_drafting if opts.index is None else opts.index, grammar=grammar,
        penalties=penalties, top_k=req.top_k or 0, min_p=req.min_p or 0.0, continues=opts.continues)


def _penalties(req: ChatRequest | CompletionRequest):
    """The request's penalties (llama.cpp's names and definitions), None when it sets none."""
    from engine.decoding.penalties import Penalties

    names = {"frequency_penalty": "frequency_penalty", "presence_penalty": "presence_penalty",
             "repeat_penalty": "repeat_penalty", "repeat_last_n": "repeat_last_n", "dry_multiplier": "dry_multiplier",
             "dry_base": "dry_base", "dry_allowed_length": "dry_allowed_length", "dry_last_n": "dry_penalty_last_n"}
    given = {k: getattr(req, field) for k, field in names.items() if getattr(req, field) is not None}
    if not given:
        return None
    pen = Penalties(**given, penalize_prompt=req.hexa.penalize_prompt)
    return pen if pen.active else None


def run(engine: Any, gen: Generation, cancel: threading.Event, emit: Emit, finished) -> None:
    """The engine thread's part: stream ``gen``'s events through ``emit``; a complete answer then
    becomes a drafting source (between requests, as ``index_response`` wants). ``finished(done)``
    hears every request's end (the server's recent list)."""
    done = None
    try:
        # compiled here, on the engine thread: the first grammar builds the vocabulary index (~0.4 s)
        constraint = engine.constraint(gen.grammar) if gen.grammar is not None else None
        for event in engine.generate(gen.ids, max_new_tokens=gen.max_new_tokens, temperature=gen.temperature,
                                     top_p=gen.top_p, seed=gen.seed, stop=gen.stop, method=gen.method,
                                     sources=gen.sources, cancel=cancel, reuse=gen.reuse,
                                     keep_answer=gen.keep_answer, constraint=constraint,
                                     penalties=gen.penalties, top_k=gen.top_k, min_p=gen.min_p,
                                     continues=gen.continues):
            if isinstance(event, Done):
                done = event
            emit(event)
        if gen.index and done is not None and done.stop_reason != "cancelled" and done.token_ids:
            engine.index_response(list(done.token_ids))
    except EngineError as exc:
        emit(Failed(400, str(exc)))
    except Exception as exc:  # the request fails in one line; the details go to the log
        log.exception("request failed")
        emit(Failed(500, f"internal error: {exc.__class__.__name__}: {exc}".splitlines()[0]))
    finally:
        finished(done)
