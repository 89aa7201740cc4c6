"""The real engine's text side without its weights: the embedded model's own tokenizer and chat
template, behind ``engine.Engine``'s very ``encode``/``decode``/``chat_ids``. Agents' logic that
only counts and fits tokens (prompt fitting, the context gauge, a memory's token counts) runs on it
in the fast tier: it loads in well under a second from the test cache (the weights take ~10 s)."""
from __future__ import annotations

from pathlib import Path

from engine.engine import Engine
from engine.methods import DEFAULT_CONTEXT


class TokenizerEngine:
    """What ``Engine`` offers for text, on the real tokenizer; ``generate`` is not here on purpose."""
    encode = Engine.encode
    decode = Engine.decode
    chat_ids = Engine.chat_ids

    def __init__(self, cache_dir: Path, context_window: int = DEFAULT_CONTEXT["torch"]):
        from engine.model.gguf_model import entry
        from engine.model.cache import ensure_cached
        from engine.model.source import resolve
        from engine.model.tokenizer import ChatTokenizer

        source = resolve(None)                  # the embedded model, as Engine.load(None) finds it
        models = Path(cache_dir) / "models"
        folder = entry(source, models) if source.kind == "gguf" else ensure_cached(source, models)
        self.tokenizer = ChatTokenizer(folder)
        self.model_name = source.name
        self.context_window = context_window
