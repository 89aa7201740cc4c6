"""Summarizer agent: ingest documents into memory, then summarize them in a chosen style.

A document that does not fit the context window is summarized in parts (map) and the part
summaries are combined (reduce), repeatedly if needed; ``Part`` events tell the app where it is.
Only the final pass streams ``Text``; every pass forwards ``Prefill``/``Step`` for the live panels.
The summary is stored as an assistant message linked to its source documents.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from engine.events import Done, Notice, Prefill, Step

from . import prompts
from .common import AgentError, cancelled_done, keep_response, prompt_budget
from .events import Part, Saved
from .sampling import generation_options

MODE = "summarizer"


class Summarizer:
    mode = MODE

    def __init__(self, engine: Any, memory: Any, settings: Any, part_tokens: int | None = None,
                 router: Any = None):
        self.engine = engine
        self.memory = memory
        self.settings = settings
        self.part_tokens = part_tokens      # force smaller parts (tests, slow devices)
        self.router = router                # engine.routing.Router (a document's long prompt may race a server)

    def ingest(self, path: str | Path, progress: Callable[[int, int], None] | None = None,
               session_id=None, cancel: threading.Event | None = None):
        """Store one file in memory (raises memory.DocumentError with a one-line reason, and
        memory.IngestCancelled, leaving nothing behind, when ``cancel`` is set meanwhile)."""
        return self.memory.add_document(Path(path).expanduser(), progress=progress,
                                        session_id=session_id, cancel=cancel)

    # -- summarizing ------------------------------------------------------------------------------
    def summarize(self, session_id, doc_ids: Sequence, style: str = "short",
                  cancel: threading.Event | None = None) -> Iterator:
        if style not in prompts.STYLES:
            raise AgentError(f"Unknown summary style {style!r} (choose {', '.join(prompts.STYLES)}).")
        names = {d.id: d.name for d in self.memory.list_documents()}
        texts = [(names.get(i, str(i)), self.memory.document_text(i)) for i in doc_ids]
        texts = [(n, t) for n, t in texts if t and t.strip()]
        if not texts:
            raise AgentError("The document has no text to summarize.")
        request = f"Summarize ({style}): " + ", ".join(n for n, _ in texts)
        session_id = self._session(session_id, [n for n, _ in texts])
        msg = self.memory.add_message(session_id, "user", request, mode=MODE, model=self.engine.model_name)
        yield Saved(session_id, msg.id, "user", request)
        document = texts[0][1] if len(texts) == 1 else "\n\n".join(f"# {n}\n\n{t}" for n, t in texts)

        budget, max_new = prompt_budget(self.engine, self.settings.max_tokens)
        system = prompts.load("summarizer_system")
        overhead = len(self._ids(system, "summarize_combine", "", style)) + 8
        limit = max(64, budget - overhead)
        if self.part_tokens:
            limit = min(limit, self.part_tokens)
        sources = self._sources(document)

        template = f"summarize_{style}"
        tokens = self.engine.encode(document)
        rounds = 0
        while len(tokens) > limit:                      # map: summarize each part, then combine
            parts = [tokens[i:i + limit] for i in range(0, len(tokens), limit)]
            if rounds == 0:
                yield Notice(f"Document is {len(tokens)} tokens: summarizing it in {len(parts)} parts.")
            summaries = []
            for index, part in enumerate(parts, 1):
                yield Part("map", index, len(parts))
                ids = self._ids(system, template, self.engine.decode(part), style)
                done = None
                for event in self._run(ids, max_new, sources, cancel):
                    if isinstance(event, (Prefill, Step, Notice)):
                        yield event
                    elif isinstance(event, Done):
                        done = event
                if done is None or done.stop_reason == "cancelled":
                    yield done or cancelled_done(self.settings.method)
                    return
                summaries.append(done.text.strip())
            tokens = self.engine.encode("\n\n".join(f"Part {i}: {s}" for i, s in enumerate(summaries, 1)))
            template = "summarize_combine"
            rounds += 1
        if rounds:
            yield Part("reduce", 1, 1)

        ids = self._ids(system, template, self.engine.decode(tokens) if rounds else document, style)
        done = None
        for event in self._run(ids, max_new, sources, cancel):
            if isinstance(event, Done):
                done = event
            yield event
        answer = keep_response(self.engine, self.memory, session_id, done, MODE)
        if answer is not None:
            self.memory.link_summary(answer.id, list(doc_ids))
            yield Saved(session_id, answer.id, "assistant", done.text)

    # -- internals --------------------------------------------------------------------------------
    def _session(self, session_id, names: list[str]):
        """The session to summarize in: a new one (None) or one still untitled is named after the
        documents, so the sessions list tells summaries apart."""
        title = "Summary: " + names[0] + (f" + {len(names) - 1} more" if len(names) > 1 else "")
        if session_id is None:
            return self.memory.new_session(MODE, title=title, model=self.engine.model_name).id
        session = self.memory.get_session(session_id)
        if session is not None and session.title in ("", "New chat", "Summary"):
            self.memory.rename_session(session_id, title)
        return session_id

    def _ids(self, system: str, template: str, document: str, style: str) -> list[int]:
        # the templates put the document first and the style's instruction after it: summarizing
        # the same document again (in any style) then starts with the same tokens, and the engine
        # reuses their KV instead of prefilling the whole document again
        user = prompts.render(template, document=document, style_hint=prompts.STYLE_HINTS[style])
        return self.engine.chat_ids([{"role": "system", "content": system},
                                     {"role": "user", "content": user}])

    def _sources(self, document: str) -> list[list[int]]:
        if not self.settings.history_drafting:
            return []
        try:
            return self.memory.drafting_sources(document[:2000], max_count=8, max_tokens=4096, mode=MODE)
        except Exception:
            return []

    def _run(self, ids, max_new: int, sources, cancel) -> Iterator:
        return (self.router or self.engine).generate(ids, max_new_tokens=max_new,
                                                     temperature=self.settings.temperature,
                                                     top_p=self.settings.top_p, method=self.settings.method,
                                                     **generation_options(self.settings, MODE),
                                                     sources=sources, cancel=cancel)


__all__ = ["Summarizer"]
