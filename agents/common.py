"""Helpers shared by the agents: fitting a chat prompt into the context window, request stats."""
from __future__ import annotations

from dataclasses import asdict
from typing import Any, Sequence

from engine.events import Done
from memory import ResponseStats

MIN_PROMPT_TOKENS = 32


class AgentError(Exception):
    """A user-facing one-line problem with a request (nothing to regenerate, empty document...)."""


def stats_of(done: Done) -> ResponseStats:
    """The figures of a finished request, for the message footer and memory."""
    return ResponseStats.from_dict(asdict(done)) or ResponseStats()


def cancelled_done(method: str = "") -> Done:
    """The Done of a request cancelled before the engine produced anything."""
    return Done("cancelled", "", (), 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, method=method or "vanilla")


def keep_response(engine: Any, memory: Any, session_id: int, done: Done | None, mode: str):
    """Store a finished response (text, token ids, stats); a complete one also becomes a drafting
    source for the engine. Returns the stored message, or None when there was nothing to keep."""
    if done is None or not done.text.strip():
        return None
    message = memory.add_message(session_id, "assistant", done.text, token_ids=list(done.token_ids),
                                 mode=mode, model=engine.model_name, stats=stats_of(done))
    if done.stop_reason != "cancelled":
        engine.index_response(list(done.token_ids))
    return message


def prompt_budget(engine: Any, max_new_tokens: int) -> tuple[int, int]:
    """(prompt token budget, max new tokens) so that both fit in the engine's context window."""
    window = int(engine.context_window)
    # the prompt keeps at least half of a small window (qnn graphs are often built for a few hundred
    # tokens): otherwise the system prompt alone fills it and the user's message is cut to nothing
    max_new = max(1, min(max_new_tokens, window - max(MIN_PROMPT_TOKENS, window // 2)))
    return window - max_new, max_new


def with_context(text: str, context: str) -> str:
    """A user message as the model reads it: the user's words, then the context retrieved for them.

    The retrieved context changes every turn, so it comes last, after the user's own words: the
    system prompt, the earlier turns and this message stay the start of the next turn's prompt,
    whose KV the engine then reuses instead of prefilling the whole chat again (it used to be in
    the system prompt: prompts differed from their first lines on). Earlier turns are rendered with
    the context they were sent with (kept with the message), or the next turn's prompt would
    differ from this one's right after the earlier message's words, and lose the answer's KV."""
    return f"{text}\n\n{context}" if context else text


def fit_chat(engine: Any, system: str, turns: Sequence[dict], user_text: str, budget: int,
             context: str = "") -> tuple[list[int], list[str], str]:
    """Chat-template ids for system + turns + the new user message (+ context), within ``budget``.

    The one prompt-fitting policy of hexa: keep the start (the system prompt: who the model is,
    the task) and the most recent; leave out the oldest in between. The engine applies it to raw
    token prompts (``engine.decoding.generation.fit_prompt``: the first 64 tokens and the last ones); here
    it is applied by whole messages, which the engine cannot see: older exchanges go first (a
    user/assistant pair at a time, so no answer is left without its question), then the
    retrieved context (the least certain part: a similarity match, not something anyone said in
    this chat), and last the user message loses its *oldest* tokens (a long paste ends with what
    is asked of it: "...summarise this"). It used to keep the message's first tokens, the
    opposite of the engine's cut. A prompt fitted here always fits the engine's window, so the
    engine's cut never fires on a chat. Returns the ids, one notice per kind of cut made, and
    the context the prompt kept ("" when it was left out).
    """
    notices: list[str] = []
    turns = list(turns)

    def build(ctx: str, text: str) -> list[int]:
        msgs = ([{"role": "system", "content": system}] if system else []) + turns
        return engine.chat_ids(msgs + [{"role": "user", "content": with_context(text, ctx)}])

    ids = build(context, user_text)
    dropped = 0
    while len(ids) > budget and turns:
        turns.pop(0)
        dropped += 1
        if turns and turns[0].get("role") == "assistant":   # keep exchanges whole
            turns.pop(0)
            dropped += 1
        ids = build(context, user_text)
    if dropped:
        notices.append(f"Context window full: {dropped} older message(s) left out of the prompt.")
    if len(ids) > budget and context:
        context = ""
        ids = build(context, user_text)
        notices.append("Context window full: retrieved context left out of the prompt.")
    if len(ids) > budget:
        text_ids = engine.encode(user_text)
        overhead = len(ids) - len(text_ids)
        keep = max(1, budget - overhead - 2)
        ids = build(context, engine.decode(text_ids[-keep:]))
        while len(ids) > budget and keep > 1:        # decode/encode may not round-trip exactly
            keep = max(1, keep - max(1, (len(ids) - budget)))
            ids = build(context, engine.decode(text_ids[-keep:]))
        notices.append(f"Message too long for the context window: kept its last {keep} tokens.")
    return ids, notices, context
