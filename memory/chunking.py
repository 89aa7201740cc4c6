"""Token counting and chunking of text by tokens with overlap.

The tokenizer is any ``str -> list[int]`` callable (the engine's, when the app has one). Chunks are
exact slices of the original text (``text[start:end]``), built from whole sentences/lines when
they fit and from words otherwise, so sources can be quoted and located.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

Tokenizer = Callable[[str], list[int]]

_WORDISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def estimate_tokenizer(text: str) -> list[int]:
    """Cheap tokenizer-free stand-in: about one id per BPE token (words split every ~5 chars).

    The ids are not real vocabulary ids; only the length is meaningful.
    """
    out: list[int] = []
    for m in _WORDISH.finditer(text):
        n = max(1, math.ceil(len(m.group()) / 5))
        out.extend([0] * n)
    return out


def count_tokens(text: str, tokenizer: Tokenizer | None = None) -> int:
    return len((tokenizer or estimate_tokenizer)(text))


@dataclass(frozen=True)
class Chunk:
    seq: int
    start: int
    end: int
    tokens: int
    text: str


# Units: a line or a sentence, with its trailing whitespace kept so slices tile the text.
_UNIT = re.compile(r".+?(?:[.!?]+(?=\s)|\n|\Z)\s*", re.UNICODE | re.DOTALL)
_WORD = re.compile(r"\S+\s*|\s+", re.UNICODE)


def _units(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for m in _UNIT.finditer(text):
        if m.end() > pos:
            spans.append((pos, m.end()))
            pos = m.end()
    if pos < len(text):
        spans.append((pos, len(text)))
    return spans


def chunk_text(text: str, tokenizer: Tokenizer | None = None, chunk_tokens: int = 200,
               overlap: int = 32) -> list[Chunk]:
    """Split ``text`` into chunks of at most ~``chunk_tokens`` tokens, consecutive chunks sharing
    about ``overlap`` tokens. Whitespace-only text gives no chunks."""
    if chunk_tokens < 8:
        raise ValueError("chunk_tokens must be >= 8")
    overlap = max(0, min(overlap, chunk_tokens // 2))
    tok = tokenizer or estimate_tokenizer

    # 1. pieces: sentence/line units, long ones split into word runs that fit a chunk
    pieces: list[tuple[int, int, int]] = []  # (start, end, tokens)
    for s, e in _units(text):
        n = len(tok(text[s:e]))
        if n <= chunk_tokens:
            pieces.append((s, e, n))
            continue
        # split by words, measuring each run (one tokenizer call per run, not per word)
        words = [(s + m.start(), s + m.end()) for m in _WORD.finditer(text[s:e])]
        per_word = max(1.0, n / max(1, len(words)))
        run = max(8, overlap or chunk_tokens // 4)  # small runs so overlap can be honoured
        step = max(1, int(run / per_word))
        i = 0
        while i < len(words):
            j = min(len(words), i + step)
            ps, pe = words[i][0], words[j - 1][1]
            pn = len(tok(text[ps:pe]))
            while pn > run and j - i > 1:  # rare: shrink until it fits
                j = i + max(1, (j - i) // 2)
                pe = words[j - 1][1]
                pn = len(tok(text[ps:pe]))
            if pn > run:  # a single giant "word": cut by characters
                frac = run / pn
                cut = max(1, int((pe - ps) * frac))
                for cs in range(ps, pe, cut):
                    ce = min(pe, cs + cut)
                    pieces.append((cs, ce, len(tok(text[cs:ce]))))
            else:
                pieces.append((ps, pe, pn))
            i = j

    # 2. pack pieces greedily; start the next chunk with trailing pieces worth ~overlap tokens
    chunks: list[Chunk] = []
    i = 0
    while i < len(pieces):
        j, total = i, 0
        while j < len(pieces) and (total + pieces[j][2] <= chunk_tokens or j == i):
            total += pieces[j][2]
            j += 1
        s, e = pieces[i][0], pieces[j - 1][1]
        body = text[s:e]
        if body.strip():
            chunks.append(Chunk(len(chunks), s, e, total, body))
        if j >= len(pieces):
            break
        # back off from j while the carried-over tail stays within the overlap budget
        k, carried = j, 0
        while k - 1 > i and carried + pieces[k - 1][2] <= overlap:
            carried += pieces[k - 1][2]
            k -= 1
        i = k
    return chunks
