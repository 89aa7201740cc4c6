"""Reading one document into memory: extract, deduplicate, chunk, store, embed; or cancel.

The document and its chunks are committed to SQLite in one transaction, then embedded batch by
batch. A cancel (checked before chunking, before storing and between batches) or an exception
from the caller's ``progress`` rolls the document back: row, chunks and the vectors already
written. A failure of the embedder or of the index keeps the document, its vectors left pending
and caught up later (``IndexKeeper.embed_document``).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from . import documents
from .chunking import Chunk
from .errors import DocumentError, IngestCancelled, StoreError
from .indexing import IndexKeeper, Progress
from .models import Document
from .repository import Repository

Chunker = Callable[[str], list[Chunk]]


def add_document(repo: Repository, index: IndexKeeper, path: Path, *, chunker: Chunker,
                 max_mib: float, progress: Progress | None = None, session_id: int | None = None,
                 cancel: threading.Event | None = None) -> Document:
    path = _absolute(path)
    extracted = documents.extract(path, max_mib=max_mib)
    known = repo.document_by_hash(extracted.sha256)
    if known is not None:
        if progress:
            progress(known.chunks, known.chunks)
        return known
    _stop_if_cancelled(cancel, path)
    chunks = chunker(extracted.text)
    if not chunks:
        raise DocumentError(f"{path.name}: no text content (empty document)")
    _stop_if_cancelled(cancel, path)
    doc, created = repo.add_document(path, extracted, chunks, session_id)
    if not created:  # the same content was stored meanwhile by another process
        return doc
    try:
        index.embed_document(doc.id, doc.chunks, progress, cancel)
    except IngestCancelled:
        _roll_back(repo, index, doc)
        raise _cancelled(path) from None
    except BaseException:  # the caller's progress raised, or Ctrl-C: keep nothing either
        _roll_back(repo, index, doc)
        raise
    return doc


def _roll_back(repo: Repository, index: IndexKeeper, doc: Document) -> None:
    with index.lock:  # see IndexKeeper.drop
        try:
            chunk_ids = repo.delete_document(doc.id)
        except StoreError:  # already deleted by another thread (delete_document, wipe)
            return
        index.drop(chunks=chunk_ids)


def _stop_if_cancelled(cancel: threading.Event | None, path: Path) -> None:
    if cancel is not None and cancel.is_set():
        raise _cancelled(path)


def _cancelled(path: Path) -> IngestCancelled:
    return IngestCancelled(f"{path.name}: cancelled; nothing was kept")


def _absolute(path: Path) -> Path:
    path = Path(path).expanduser()
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError up to Python 3.12)
        return path  # extract() names the problem
