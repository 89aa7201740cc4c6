"""Helpers the memory tests import (fixtures live in conftest.py)."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sentences(n: int, topic: str = "weather") -> str:
    """``n`` distinct sentences (about 14 estimated tokens each): a big document in a few ms."""
    return " ".join(f"Sentence {i} says the {topic} in town {i % 13} was mild on day {i}."
                    for i in range(n))


def child_env() -> dict:
    """The environment of a child process running hexa's memory from this checkout."""
    return dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", HEXA_EMBED_THREADS="1")
