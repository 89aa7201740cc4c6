"""hexa memory: local history, documents, retrieval and drafting sources (SQLite + chromadb).

    from memory import Memory
    mem = Memory.open(data_dir, tokenizer=None)
"""
from .errors import DocumentError, IngestCancelled, StoreError
from .memory import Memory
from .models import ContextItem, Document, Message, ResponseStats, SentContext, Session
from .options import MemoryOptions
from .retrieval import Policy, budget_for

__all__ = ["Memory", "MemoryOptions", "StoreError", "DocumentError", "IngestCancelled", "Session", "Message",
           "Document", "ContextItem", "ResponseStats", "SentContext", "Policy", "budget_for"]
