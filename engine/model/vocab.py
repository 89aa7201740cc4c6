"""The tokenizer's vocabulary as text, indexed for constrained decoding (built once per tokenizer).

Each token's *text* is exactly what it adds to the output. Byte-level BPE (SmolLM2, Qwen2, LLaMA 3)
stores tokens as bytes mapped to printable characters (``Ġtap`` = b" tap"): the text is those bytes
decoded as UTF-8. A token holding only part of a UTF-8 sequence (half of an emoji or of a curly
quote) has no text of its own: it is never allowed under a constraint, inside literals or free
text alike — the constraint works on characters, and such a token is not a whole character (the
model can still write the character with a token that holds it whole). Special tokens (``<|im_end|>``
...) have no text either; end-of-turn tokens are handled by the constraint itself.

The index is the texts sorted, so that the tokens starting with a prefix are one contiguous range
(found by bisection): walking a grammar and this "implicit trie" together visits only the prefixes
the grammar allows, never the 49k tokens.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_TOP = "\U0010ffff"   # sorts after every character a token text holds


def prefix_range(keys: list[str], prefix: str, lo: int, hi: int) -> tuple[int, int]:
    """The positions [a, b) within [lo, hi) of the sorted ``keys`` that start with ``prefix``."""
    return bisect_left(keys, prefix, lo, hi), bisect_left(keys, prefix + _TOP, lo, hi)


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's bytes_to_unicode, inverted: printable character -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def token_texts(tokenizer, vocab_size: int) -> list[str | None]:
    """Per token id (the model's whole vocabulary): its text, or None (special, partial UTF-8, none)."""
    texts: list[str | None] = [None] * vocab_size
    backend = getattr(tokenizer, "backend", None)        # engine.tokenizer.ChatTokenizer
    if backend is not None and type(backend.decoder).__name__ == "ByteLevel":
        dec = _byte_decoder()
        special = {i for i, t in backend.get_added_tokens_decoder().items() if t.special}
        for piece, i in backend.get_vocab(with_added_tokens=False).items():
            if i < vocab_size and i not in special and all(c in dec for c in piece):
                texts[i] = _utf8(bytes(dec[c] for c in piece)) or None
        for i, tok in backend.get_added_tokens_decoder().items():
            if i < vocab_size and not tok.special:
                texts[i] = tok.content or None
        return texts
    # any other tokenizer: one decode per token; U+FFFD marks a partial UTF-8 sequence
    for i in range(vocab_size):
        text = tokenizer.decode([i], skip_special_tokens=True)
        texts[i] = text if text and "\ufffd" not in text else None
    return texts


@dataclass
class FreeTables:
    """What free text with excluded characters E needs, per sorted position of the vocabulary."""
    clean_from: np.ndarray         # int32: 1 + index of the last excluded character (0: none)
    clean_by_id: np.ndarray        # bool over token ids: a text with no excluded character
    # tokens "free chars, then an excluded character, then more" grouped by that tail (p >= 1
    # free characters first): the tail is walked through the grammar after the free segment
    tail_keys: list[str]
    tail_ids: list[np.ndarray]     # int64
    tail_free: list[np.ndarray]    # int64: free characters before the tail, per token


class VocabIndex:
    """Token texts sorted; ``order[j]`` is the id of the j-th text, ``lens[j]`` its length."""

    def __init__(self, texts: list[str | None]):
        self.texts = texts
        self.vocab_size = len(texts)
        entries = sorted((t, i) for i, t in enumerate(texts) if t)
        self.keys = [t for t, _ in entries]
        self.ids = [i for _, i in entries]
        self.order = np.array(self.ids, dtype=np.int64)
        self.lens = np.array([len(t) for t in self.keys], dtype=np.int32)
        self.lens_by_id = np.array([len(t or "") for t in texts], dtype=np.int32)
        self.max_len = int(self.lens.max()) if self.keys else 0
        self._free: dict[frozenset[str], FreeTables] = {}

    @classmethod
    def from_tokenizer(cls, tokenizer, vocab_size: int) -> "VocabIndex":
        return cls(token_texts(tokenizer, vocab_size))

    def range(self, prefix: str, lo: int = 0, hi: int | None = None) -> tuple[int, int]:
        """The sorted positions [lo, hi) of the texts that start with ``prefix``."""
        return prefix_range(self.keys, prefix, lo, len(self.keys) if hi is None else hi)

    def free_tables(self, exclude: frozenset[str]) -> FreeTables:
        tables = self._free.get(exclude)
        if tables is None:
            tables = self._free[exclude] = self._build_free(exclude)
        return tables

    def _build_free(self, exclude: frozenset[str]) -> FreeTables:
        clean_from = []
        tails: dict[str, tuple[list[int], list[int]]] = {}
        for text, tid in zip(self.keys, self.ids):
            hits = [k for k, c in enumerate(text) if c in exclude]
            clean_from.append(hits[-1] + 1 if hits else 0)
            if hits and hits[0] >= 1:
                ids, free = tails.setdefault(text[hits[0]:], ([], []))
                ids.append(tid)
                free.append(hits[0])
        cf = np.array(clean_from, dtype=np.int32)
        by_id = np.zeros(self.vocab_size, dtype=np.bool_)
        by_id[self.order[cf == 0]] = True
        keys = sorted(tails)
        return FreeTables(cf, by_id, keys, [np.array(tails[k][0], dtype=np.int64) for k in keys],
                          [np.array(tails[k][1], dtype=np.int64) for k in keys])
