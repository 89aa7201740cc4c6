"""Assistant agent: chat turns with retrieved context and history drafting sources.

``respond`` builds the prompt (system prompt + conversation + the new message, then the context
retrieved for it, cut to fit the context window: what changes per turn comes last, so the engine
reuses the rest), stores the user turn with the context it is sent with before the engine starts
(nothing typed is lost on a crash; later turns render it as sent, see ``common.with_context``),
runs the engine, then stores the response with its token ids and stats and indexes it for
drafting. Every method runs on the caller's worker thread: memory and engine work alike.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterator

from engine.events import Done, Notice

from . import prompts
from .common import (MIN_PROMPT_TOKENS, AgentError, fit_chat, keep_response, prompt_budget, stats_of,
                     with_context)
from .events import Saved
from .sampling import generation_options

MODE = "assistant"
DEFAULT_TITLE = "New chat"
CONTEXT = "retrieved_context"   # a user message's stats key: the context it was sent with
TITLE_CHARS = 40


@dataclass(frozen=True)
class Prompt:
    ids: list[int]
    max_new: int
    notices: list[str]     # what retrieval and fitting the window had to say
    context: str           # the retrieved context the prompt holds ("" for none)


def sent_with(message) -> str | None:
    """The retrieved context a stored user message was sent with; None if not recorded (older)."""
    value = (message.stats or {}).get(CONTEXT)
    return value if isinstance(value, str) else None


def title_of(text: str) -> str:
    title = " ".join(text.split())
    return title[:TITLE_CHARS] + ("…" if len(title) > TITLE_CHARS else "")


class Assistant:
    mode = MODE

    def __init__(self, engine: Any, memory: Any, settings: Any):
        self.engine = engine
        self.memory = memory
        self.settings = settings

    # -- requests ---------------------------------------------------------------------------------
    def respond(self, session_id, user_text: str, cancel: threading.Event | None = None) -> Iterator:
        """Answer ``user_text`` in session ``session_id`` (None: a new session, titled after it)."""
        user_text = user_text.strip()
        if not user_text:
            raise AgentError("Nothing to send.")
        if session_id is None:
            session_id = self.memory.new_session(MODE, title=title_of(user_text),
                                                 model=self.engine.model_name).id
        history = self.memory.messages(session_id)
        prompt = self._prompt(session_id, history, user_text)
        msg = self.memory.add_message(session_id, "user", user_text, mode=MODE,
                                      model=self.engine.model_name, stats={CONTEXT: prompt.context})
        self._maybe_title(session_id, history, user_text)
        yield Saved(session_id, msg.id, "user", user_text)
        yield from self._generate(session_id, prompt, user_text, cancel)

    def regenerate(self, session_id, cancel: threading.Event | None = None) -> Iterator:
        """Drop the last response of the session and answer its last user message again."""
        history = self.memory.messages(session_id)
        while history and history[-1].role == "assistant":
            self.memory.delete_message(history.pop().id)
        if not history or history[-1].role != "user":
            raise AgentError("Nothing to regenerate: send a message first.")
        user = history.pop()
        # with the context it was sent with, so the prompt is the last answer's (its KV is reused)
        yield from self._generate(session_id, self._prompt(session_id, history, user.text, sent_with(user)),
                                  user.text, cancel)

    def continue_last(self, session_id, cancel: threading.Event | None = None) -> Iterator:
        """Generate more of the session's last response (one cut by the token limit, say); the
        stored message grows in place. Text events carry only the new part."""
        history = self.memory.messages(session_id)
        if len(history) < 2 or history[-1].role != "assistant" or history[-2].role != "user":
            raise AgentError("Nothing to continue: the last message is not a response.")
        answer, user = history[-1], history[-2]
        # the response's own token ids, so the model resumes exactly where it stopped
        # (an edited response has none: its text is tokenized again)
        done_ids = list(answer.token_ids) or self.engine.encode(answer.text)
        budget, max_new = prompt_budget(self.engine, self.settings.max_tokens)
        room = budget - len(done_ids)
        ids, cuts, _ = fit_chat(self.engine, self._system(session_id), self._turns(history[:-2]), user.text,
                                room, sent_with(user) or "") if room >= MIN_PROMPT_TOKENS else ([], [], "")
        if not ids or len(ids) > room:
            raise AgentError("The response already fills the context window: it cannot be continued.")
        for note in cuts:
            yield Notice(note)
        done = None
        for event in self._run(ids + done_ids, max_new, self._sources(user.text), cancel):
            if isinstance(event, Done):
                done = event
            yield event
        if done is not None and not done.text and done.stop_reason == "eos":
            yield Notice("The response was complete: the model has nothing to add.")
        if done is not None and done.text:
            stats = stats_of(done)
            self.memory.update_message(answer.id, text=answer.text + done.text,
                                       token_ids=done_ids + list(done.token_ids) if answer.token_ids else None,
                                       stats=stats)
            if done.stop_reason != "cancelled" and answer.token_ids:
                self.engine.index_response(done_ids + list(done.token_ids))
            yield Saved(session_id, answer.id, "assistant", answer.text + done.text)

    def context_tokens(self, session_id) -> int:
        """Tokens the session's conversation takes in the prompt now (system prompt and turns,
        before retrieval), for the context gauge."""
        turns = self._turns(self.memory.messages(session_id))
        return len(self.engine.chat_ids([{"role": "system", "content": self._system(session_id)}] + turns))

    # -- internals --------------------------------------------------------------------------------
    def _maybe_title(self, session_id, history, user_text: str) -> None:
        if history:
            return
        session = self.memory.get_session(session_id)
        if session is not None and session.title in ("", DEFAULT_TITLE):
            self.memory.rename_session(session_id, title_of(user_text))

    def _system(self, session_id) -> str:
        session = self.memory.get_session(session_id)
        return (getattr(session, "system_prompt", "") or "").strip() or prompts.load("assistant_system")

    @staticmethod
    def _turns(messages) -> list[dict]:
        """The conversation as the model read it: user messages with the context they were sent with."""
        return [{"role": m.role, "content": with_context(m.text, sent_with(m) or "")} for m in messages
                if m.role in ("user", "assistant") and m.text]

    def _context(self, session_id, user_text: str, history) -> tuple[str, list[str]]:
        if not self.settings.retrieval:
            return "", []
        try:
            items = self.memory.context_for(user_text, k=4, token_budget=512, session_id=session_id)
        except Exception as exc:  # retrieval is best effort: answer anyway
            return "", [f"Retrieval skipped: {exc}"]
        seen = {m.text.strip() for m in history} | {user_text}
        lines = [f"- {it.text.strip()}" for it in items if it.text.strip() not in seen]
        return (prompts.render("context", context="\n".join(lines)) if lines else ""), []

    def _sources(self, user_text: str) -> list[list[int]]:
        if not self.settings.history_drafting:
            return []
        try:
            return self.memory.drafting_sources(user_text, max_count=8, max_tokens=4096, mode=MODE)
        except Exception:
            return []

    def _run(self, ids: list[int], max_new: int, sources, cancel) -> Iterator:
        return self.engine.generate(ids, max_new_tokens=max_new, temperature=self.settings.temperature,
                                    top_p=self.settings.top_p, method=self.settings.method,
                                    **generation_options(self.settings, MODE),
                                    sources=sources, cancel=cancel, keep_answer=True)   # the next turn continues it

    def _prompt(self, session_id, history, user_text: str, context: str | None = None) -> Prompt:
        """The request for ``user_text`` after ``history``: the context is retrieved unless given
        (the one a stored message was sent with)."""
        notes: list[str] = []
        if context is None:
            context, notes = self._context(session_id, user_text, history)
        budget, max_new = prompt_budget(self.engine, self.settings.max_tokens)
        ids, cuts, kept = fit_chat(self.engine, self._system(session_id), self._turns(history), user_text,
                                   budget, context)
        return Prompt(ids, max_new, notes + cuts, kept)

    def _generate(self, session_id, prompt: Prompt, user_text: str, cancel) -> Iterator:
        for note in prompt.notices:
            yield Notice(note)
        done: Done | None = None
        for event in self._run(prompt.ids, prompt.max_new, self._sources(user_text), cancel):
            if isinstance(event, Done):
                done = event
            yield event
        msg = keep_response(self.engine, self.memory, session_id, done, MODE)
        if msg is not None:
            yield Saved(session_id, msg.id, "assistant", done.text)
