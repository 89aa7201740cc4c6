"""Assistant agent: chat turns with retrieved context and history drafting sources.

``respond`` builds the prompt (system prompt + conversation + the new message, then the context
retrieved for it, cut to fit the context window: what changes per turn comes last, so the engine
reuses the rest), stores the user turn with the context it is sent with before the engine starts
(nothing typed is lost on a crash; later turns render it as sent, see ``common.with_context``),
runs the engine, then stores the response with its token ids and stats and indexes it for
drafting. Every method runs on the caller's worker thread: memory and engine work alike.

Retrieval is switched by the ``retrieval`` setting, then a session's own switch
(``Memory.set_session_retrieval``), then the message's (``respond(..., retrieval=False)``): the
most specific one that is set wins. What is sent is what ``memory.retrieval`` finds relevant enough
(a calibrated threshold) within a budget that grows with the question.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterator

from engine.events import Done, Notice
from memory import SentContext, budget_for

from . import prompts
from .common import (MIN_PROMPT_TOKENS, AgentError, fit_chat, keep_response, prompt_budget, stats_of,
                     with_context)
from .events import Saved
from .sampling import generation_options

MODE = "assistant"
DEFAULT_TITLE = "New chat"
TITLE_CHARS = 40
CONTEXT_ITEMS = 4       # most notes one message brings


@dataclass(frozen=True)
class Prompt:
    ids: list[int]
    max_new: int
    notices: list[str]     # what retrieval and fitting the window had to say
    context: SentContext | None   # the retrieved context the prompt holds (None: none)


def sent_with(message) -> str:
    """The retrieved context text a stored user message was sent with ("" for none)."""
    return message.context.text if getattr(message, "context", None) is not None else ""


def describe(context: SentContext | None) -> str:
    """One line for what a message was sent with: "context: 2 notes from 'Dragon story'"."""
    if context is None or not context.text:
        return ""
    if not context.items:                  # stored before schema v4: the text only
        return "context: notes from memory"
    titles: list[str] = []
    for it in context.items:
        title = it.title or it.source
        if title not in titles:
            titles.append(title)
    n = len(context.items)
    shown = ", ".join(f"'{t}'" for t in titles[:3]) + (f" and {len(titles) - 3} more" if len(titles) > 3 else "")
    return f"context: {n} note{'s' if n != 1 else ''} from {shown}"


def details(context: SentContext | None) -> str:
    """The notes one per line with their similarity, for the expanded line and ``hexa ask -v``."""
    if context is None or not context.text:
        return ""
    if not context.items:
        return context.text
    return "\n".join(f"[{it.score:.2f}] {it.title or it.source} ({it.tokens} tok): "
                     f"{' '.join(it.text.split())}" for it in context.items)


def title_of(text: str) -> str:
    title = " ".join(text.split())
    return title[:TITLE_CHARS] + ("…" if len(title) > TITLE_CHARS else "")


def request_options(settings, max_new: int, sources) -> dict:
    """``Engine.generate``'s options for an assistant request (``hexa bench --app`` gives the engine
    alone the same)."""
    return {"max_new_tokens": max_new, "temperature": settings.temperature, "top_p": settings.top_p,
            "method": settings.method, **generation_options(settings, MODE), "sources": sources,
            "keep_answer": True}      # the next turn continues it


class Assistant:
    mode = MODE

    def __init__(self, engine: Any, memory: Any, settings: Any, router: Any = None, router_note: str = ""):
        self.engine = engine
        self.memory = memory
        self.settings = settings
        self.router = router            # engine.routing.Router: device and server together (None: device)
        self.router_note = router_note  # why routing is off though a server is configured, said once

    # -- requests ---------------------------------------------------------------------------------
    def respond(self, session_id, user_text: str, cancel: threading.Event | None = None,
                retrieval: bool | None = None) -> Iterator:
        """Answer ``user_text`` in session ``session_id`` (None: a new session, titled after it).
        ``retrieval``: this message's switch (None: the session's, else the setting's)."""
        user_text = user_text.strip()
        if not user_text:
            raise AgentError("Nothing to send.")
        if session_id is None:
            session_id = self.memory.new_session(MODE, title=title_of(user_text),
                                                 model=self.engine.model_name).id
        history = self.memory.messages(session_id)
        prompt = self._prompt(session_id, history, user_text, retrieval=retrieval)
        msg = self.memory.add_message(session_id, "user", user_text, mode=MODE,
                                      model=self.engine.model_name, context=prompt.context)
        self._maybe_title(session_id, history, user_text)
        yield Saved(session_id, msg.id, "user", user_text, context=prompt.context,
                    prompt_tokens=len(prompt.ids))
        yield from self._generate(session_id, prompt, user_text, cancel)

    def retrieval_on(self, session_id, message: bool | None = None) -> bool:
        """Whether a message is sent with retrieved context: its own switch, else the session's,
        else the setting."""
        if message is not None:
            return message
        session = self.memory.get_session(session_id) if session_id is not None else None
        on = getattr(session, "retrieval", None)
        return bool(self.settings.retrieval) if on is None else on

    def regenerate(self, session_id, cancel: threading.Event | None = None) -> Iterator:
        """Drop the last response of the session and answer its last user message again."""
        history = self.memory.messages(session_id)
        while history and history[-1].role == "assistant":
            self.memory.delete_message(history.pop().id)
        if not history or history[-1].role != "user":
            raise AgentError("Nothing to regenerate: send a message first.")
        user = history.pop()
        # with the context it was sent with, so the prompt is the last answer's (its KV is reused)
        prompt = self._prompt(session_id, history, user.text, user.context or SentContext())
        yield from self._generate(session_id, prompt, user.text, cancel)

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
                                room, sent_with(user)) if room >= MIN_PROMPT_TOKENS else ([], [], "")
        if not ids or len(ids) > room:
            raise AgentError("The response already fills the context window: it cannot be continued.")
        for note in cuts:
            yield Notice(note)
        done = None
        # its own ids are fed as decoding fed them (``continues``): with bf16 prompt rows a prompt's
        # arithmetic differs, and a near tie could make the continuation differ from an uncut answer
        for event in self._run(ids + done_ids, max_new, self._sources(user.text), cancel,
                               continues=len(done_ids) if answer.token_ids else 0):
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
        return [{"role": m.role, "content": with_context(m.text, sent_with(m))} for m in messages
                if m.role in ("user", "assistant") and m.text]

    def _context(self, session_id, user_text: str, history,
                 retrieval: bool | None = None) -> tuple[SentContext | None, list[str]]:
        """The notes relevant enough to send with ``user_text`` (None: none, or switched off)."""
        if not self.retrieval_on(session_id, retrieval):
            return None, []
        budget = budget_for(len(self.engine.encode(user_text)), int(self.settings.retrieval_tokens))
        try:
            items = self.memory.context_for(user_text, k=CONTEXT_ITEMS, token_budget=budget,
                                            session_id=session_id)
        except Exception as exc:  # retrieval is best effort: answer anyway
            return None, [f"Retrieval skipped: {exc}"]
        seen = {m.text.strip() for m in history} | {user_text}
        items = [it for it in items if it.text.strip() not in seen]   # already in the prompt
        if not items:
            return None, []
        text = prompts.render("context", context="\n".join(f"- {it.text.strip()}" for it in items))
        return SentContext(text, items), []

    def _sources(self, user_text: str) -> list[list[int]]:
        if not self.settings.history_drafting:
            return []
        try:
            return self.memory.drafting_sources(user_text, max_count=8, max_tokens=4096, mode=MODE)
        except Exception:
            return []

    def _run(self, ids: list[int], max_new: int, sources, cancel, continues: int = 0) -> Iterator:
        if self.router_note:
            yield Notice(self.router_note)
            self.router_note = ""
        options = request_options(self.settings, max_new, sources) | ({"continues": continues} if continues else {})
        yield from (self.router or self.engine).generate(ids, **options, cancel=cancel)

    def _prompt(self, session_id, history, user_text: str, context: SentContext | None = None,
                retrieval: bool | None = None) -> Prompt:
        """The request for ``user_text`` after ``history``: the context is retrieved unless given
        (the one a stored message was sent with)."""
        notes: list[str] = []
        if context is None:
            context, notes = self._context(session_id, user_text, history, retrieval)
        budget, max_new = prompt_budget(self.engine, self.settings.max_tokens)
        ids, cuts, kept = fit_chat(self.engine, self._system(session_id), self._turns(history), user_text,
                                   budget, context.text if context is not None else "")
        return Prompt(ids, max_new, notes + cuts, context if kept else None)

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
