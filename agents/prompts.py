"""Prompt templates shipped in ``assets/prompts`` (Markdown files with ``{placeholders}``)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "assets" / "prompts"

STYLES = ("short", "detailed", "bullets")
STYLE_HINTS = {
    "short": "Write two or three sentences.",
    "detailed": "Write a few detailed paragraphs.",
    "bullets": "Write short Markdown bullet points, one key fact per bullet.",
}


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """Text of ``assets/prompts/<name>.md`` without the trailing newline."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8").strip()


def render(name: str, **values: str) -> str:
    return load(name).format(**values)
