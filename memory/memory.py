"""The ``Memory`` facade: history, documents, retrieval and drafting sources, all on the device.

Layout under the data folder::

    <data_dir>/memory/hexa.db        SQLite (WAL), the source of truth
    <data_dir>/memory/vectors/       chromadb index, rebuilt from SQLite when missing or damaged

Every change is committed to SQLite first; vectors are written afterwards (``indexing``), and a
failed or interrupted vector write is caught up later. Opening is cheap: chromadb and the
embedding model load on the first retrieval or write that needs them (``warmup()`` does it ahead
of time, e.g. from a background thread). One ``Memory`` may be used from several threads.

The work is done by: ``repository`` (SQL and records), ``ingest`` (reading documents in),
``indexing`` (the vector index), ``retrieval`` (context and drafting sources) and ``export``.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Callable, Iterable, Sequence

from . import chunking, export, ingest
from .embeddings import Embedder
from .episodes import EpisodeLog
from .indexing import IndexKeeper, Progress
from .models import ContextItem, Document, Message, ResponseStats, SentContext, Session
from .options import MemoryOptions
from .repository import UNCHANGED, Repository
from .retrieval import Policy, Retriever
from .store import Store
from .ui_graph import TextVectors, UIGraphStore
from .vectors import VectorIndex

log = logging.getLogger("hexa.memory")

Tokenizer = Callable[[str], list[int]]


class Memory:
    def __init__(self, data_dir: Path, tokenizer: Tokenizer | None = None,
                 max_file_mb: float = 20.0, chunk_tokens: int = 200, chunk_overlap: int = 32,
                 on_notice: Callable[[str], None] | None = None, embedder: Embedder | None = None,
                 options: MemoryOptions | None = None):
        self.data_dir = Path(data_dir)
        self.root = self.data_dir / "memory"
        self.tokenizer: Tokenizer = tokenizer or chunking.estimate_tokenizer  # the app swaps it
        self.max_file_mb = float(max_file_mb)  # MiB, as ``hexa memory add --max-mb`` says
        self.chunk_tokens = chunk_tokens
        self.chunk_overlap = chunk_overlap
        self.on_notice = on_notice
        self.notices: list[str] = []
        self.store = Store(self.root / "hexa.db")
        self.repo = Repository(self.store)
        options = options or MemoryOptions()
        self.embedder = embedder or Embedder(options.embed_model, threads=options.embed_threads)
        self.vectors = VectorIndex(self.root / "vectors", self.embedder)
        self.index = IndexKeeper(self.store, self.vectors, self.embedder, self.notice)
        self.retriever = Retriever(self.store, self.index, self.count_tokens)
        self.episodes = EpisodeLog(self.store, self.repo, self.retriever)   # UI-agent trajectories
        self.ui_graphs = UIGraphStore(self.store)                           # UI-agent app knowledge
        self.text_vectors = TextVectors(self.store, self.embedder,
                                        getattr(self.embedder, "name", type(self.embedder).__name__))
        self._closed = False

    @classmethod
    def open(cls, data_dir: Path, tokenizer: Tokenizer | None = None, max_file_mb: float = 20.0,
             **kw) -> "Memory":
        """Open (creating if needed) the store under ``data_dir``. Fast: no model, no chromadb."""
        return cls(data_dir, tokenizer=tokenizer, max_file_mb=max_file_mb, **kw)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.index.close()
        self.store.close()

    def notice(self, text: str) -> None:
        self.notices.append(text)
        log.warning(text)
        if self.on_notice:
            with contextlib.suppress(Exception):  # a notice never breaks the operation
                self.on_notice(text)

    def warmup(self) -> None:
        """Load chromadb and the embedding model now (call from a background thread)."""
        self.index.ready()
        self.embedder.model()

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text))

    # -- sessions -----------------------------------------------------------------------------
    def new_session(self, mode: str, title: str = "New chat", model: str = "",
                    system_prompt: str = "") -> Session:
        return self.repo.new_session(mode, title, model, system_prompt)

    def list_sessions(self, mode: str | None = None) -> list[Session]:
        return self.repo.list_sessions(mode)

    def get_session(self, id: int) -> Session | None:
        return self.repo.get_session(id)

    def rename_session(self, id: int, title: str) -> None:
        self.repo.update_session(id, "title", title)

    def set_system_prompt(self, id: int, text: str) -> None:
        self.repo.update_session(id, "system_prompt", text)

    def set_session_model(self, id: int, model: str) -> None:
        self.repo.update_session(id, "model", model)

    def set_session_retrieval(self, id: int, on: bool | None) -> None:
        """Switch retrieval on or off for one session (None: follow the setting again)."""
        self.repo.set_session_retrieval(id, on)

    def delete_session(self, id: int) -> None:
        with self.index.lock:  # see IndexKeeper.drop
            self.index.drop(messages=self.repo.delete_session(id))

    # -- messages -----------------------------------------------------------------------------
    def add_message(self, session_id: int, role: str, text: str,
                    token_ids: Sequence[int] | None = None, mode: str = "", model: str = "",
                    stats: ResponseStats | dict | None = None,
                    context: SentContext | None = None) -> Message:
        """Store a message; ``stats``: a response's figures, ``context``: the retrieved context a
        user message is sent with."""
        msg = self.repo.add_message(session_id, role, text, token_ids, mode, model, stats, context)
        self.index.catch_up()  # a failure only leaves the vectors pending (with a notice)
        return msg

    def update_message(self, message_id: int, *, text: str | None = None,
                       token_ids: Sequence[int] | None = UNCHANGED,  # type: ignore[assignment]
                       stats: ResponseStats | dict | None = None) -> None:
        """Edit a message in place (an edit, a continued reply). ``token_ids=None`` clears them;
        left out, they are kept. Its vectors are rewritten."""
        with self.index.lock:  # see IndexKeeper.drop
            self.repo.update_message(message_id, text, token_ids, stats)
            self.index.drop(messages=[message_id])  # e.g. no token ids now: no drafting source
        self.index.catch_up()  # the new vectors

    def messages(self, session_id: int) -> list[Message]:
        return self.repo.messages(session_id)

    def get_message(self, message_id: int) -> Message | None:
        return self.repo.get_message(message_id)

    def delete_message(self, message_id: int) -> None:
        with self.index.lock:  # see IndexKeeper.drop
            self.repo.delete_message(message_id)
            self.index.drop(messages=[message_id])

    def link_summary(self, message_id: int, doc_ids: list[int]) -> None:
        """Record that message ``message_id`` (a summary) was made from documents ``doc_ids``."""
        self.repo.link_summary(message_id, doc_ids)

    def summary_sources(self, message_id: int) -> list[Document]:
        return self.repo.summary_sources(message_id)

    # -- documents ----------------------------------------------------------------------------
    def add_document(self, path: Path, progress: Progress | None = None,
                     session_id: int | None = None,
                     cancel: threading.Event | None = None) -> Document:
        """Read one file in. Raises ``DocumentError`` with a one-line reason when refused, and
        ``IngestCancelled`` when ``cancel`` is set meanwhile (nothing is kept).

        ``progress(done, total)`` follows the embedding of its chunks; an exception it raises
        rolls the document back and propagates. An already stored content is returned as is."""
        return ingest.add_document(self.repo, self.index, path, chunker=self._chunk,
                                   max_mib=self.max_file_mb, progress=progress,
                                   session_id=session_id, cancel=cancel)

    def _chunk(self, text: str) -> list[chunking.Chunk]:
        return chunking.chunk_text(text, self.tokenizer, self.chunk_tokens, self.chunk_overlap)

    def get_document(self, doc_id: int) -> Document | None:
        return self.repo.get_document(doc_id)

    def document_text(self, doc_id: int) -> str:
        return self.repo.document_text(doc_id)

    def document_chunks(self, doc_id: int) -> list[str]:
        return self.repo.document_chunks(doc_id)

    def list_documents(self) -> list[Document]:
        return self.repo.list_documents()

    def delete_document(self, doc_id: int) -> None:
        """Forget a document: its row, chunks and vectors (summaries keep their text)."""
        with self.index.lock:  # see IndexKeeper.drop
            self.index.drop(chunks=self.repo.delete_document(doc_id))

    # -- retrieval ----------------------------------------------------------------------------
    def context_for(self, query: str, k: int = 4, token_budget: int = 512,
                    session_id: int | None = None,
                    kinds: Iterable[str] = ("message", "chunk"),
                    policy: Policy = Policy()) -> list[ContextItem]:
        """The ``k`` most relevant past turns and document chunks for ``query``, best first,
        together within ``token_budget`` tokens (the last item may be cut to fit).

        ``session_id``: the conversation in progress; its own messages are left out (the agent
        already has them in the prompt). Documents are searched whatever session they came with
        (those given in this session rank first). ``policy``: the relevance threshold and rank
        bonuses (``Policy.legacy()``: the k nearest, whatever their similarity).
        """
        return self.retriever.context_for(query, k, token_budget, session_id, kinds, policy)

    def drafting_sources(self, query: str, max_count: int = 8, max_tokens: int = 4096,
                         mode: str | None = None) -> list[list[int]]:
        """Token ids of past assistant responses whose requests are most similar to ``query``,
        best first; at most ``max_count`` sequences and ``max_tokens`` ids in all (the last
        sequence may be cut)."""
        return self.retriever.drafting_sources(query, max_count, max_tokens, mode)

    # -- export, stats, maintenance -----------------------------------------------------------
    def export_session(self, id: int, fmt: str = "md") -> str:
        return export.export_session(self.repo, id, fmt)

    def stats(self) -> dict:
        return export.stats(self.store, self.root, self.vectors.path)

    def reindex(self, progress: Progress | None = None) -> int:
        """Rebuild every vector from SQLite. Returns the number of vectors written."""
        return self.index.rebuild(progress)

    def check(self, full: bool = True, repair: bool = False):
        """Probe that the index finds each vector by its own embedding (all, or the sample taken
        after a crash); ``repair`` rebuilds it from SQLite when some are unreachable. Returns a
        ``crashsafe.CheckReport``."""
        return self.index.check(full, repair)

    def wipe(self) -> None:
        """Delete every session, message and document, and every vector."""
        with self.index.lock:  # see IndexKeeper.drop: ids start again from 1
            self.repo.wipe()
            self.index.clear()
