"""Assistant agent: chat turns with retrieved context and history drafting sources.

``respond`` stores the user turn first (nothing typed is lost on a crash), builds the prompt
(system prompt + retrieved context + conversation, cut to fit the context window), runs the
engine, then stores the response with its token ids and stats and indexes it for drafting.
"""
from __future__ import annotations

import threading
from typing import Any, Iterator

from engine.events import Done, Notice

from . import prompts
from .common import AgentError, fit_chat, keep_response, method_for, prompt_budget
from .events import Saved

MODE = "assistant"
DEFAULT_TITLE = "New chat"


class Assistant:
    mode = MODE

    def __init__(self, engine: Any, memory: Any, settings: Any):
        self.engine = engine
        self.memory = memory
        self.settings = settings

    # -- requests ---------------------------------------------------------------------------------
    def respond(self, session_id, user_text: str, cancel: threading.Event | None = None) -> Iterator:
        user_text = user_text.strip()
        if not user_text:
            raise AgentError("Nothing to send.")
        history = self.memory.messages(session_id)
        msg = self.memory.add_message(session_id, "user", user_text, mode=MODE,
                                      model=self.engine.model_name)
        self._maybe_title(session_id, history, user_text)
        yield Saved(session_id, msg.id, "user", user_text)
        yield from self._generate(session_id, history, user_text, cancel)

    def regenerate(self, session_id, cancel: threading.Event | None = None) -> Iterator:
        """Drop the last response of the session and answer its last user message again."""
        history = self.memory.messages(session_id)
        while history and history[-1].role == "assistant":
            self.memory.delete_message(history.pop().id)
        if not history or history[-1].role != "user":
            raise AgentError("Nothing to regenerate: send a message first.")
        user = history.pop()
        yield from self._generate(session_id, history, user.text, cancel)

    # -- internals --------------------------------------------------------------------------------
    def _maybe_title(self, session_id, history, user_text: str) -> None:
        if history:
            return
        session = self.memory.get_session(session_id)
        if session is not None and session.title in ("", DEFAULT_TITLE):
            title = " ".join(user_text.split())
            self.memory.rename_session(session_id, title[:40] + ("…" if len(title) > 40 else ""))

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

    def _generate(self, session_id, history, user_text: str, cancel) -> Iterator:
        session = self.memory.get_session(session_id)
        system = (getattr(session, "system_prompt", "") or "").strip() or prompts.load("assistant_system")
        context, notes = self._context(session_id, user_text, history)
        turns = [{"role": m.role, "content": m.text} for m in history
                 if m.role in ("user", "assistant") and m.text]
        budget, max_new = prompt_budget(self.engine, self.settings.max_tokens)
        ids, cuts = fit_chat(self.engine, system, turns, user_text, budget, context)
        for note in notes + cuts:
            yield Notice(note)
        done: Done | None = None
        for event in self.engine.generate(
                ids, max_new_tokens=max_new, temperature=self.settings.temperature,
                top_p=self.settings.top_p, method=method_for(self.engine, self.settings.method),
                sources=self._sources(user_text), cancel=cancel):
            if isinstance(event, Done):
                done = event
            yield event
        msg = keep_response(self.engine, self.memory, session_id, done, MODE)
        if msg is not None:
            yield Saved(session_id, msg.id, "assistant", done.text)
