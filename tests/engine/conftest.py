"""Engine test fixtures: one real Engine for the session, on a persistent model cache.

The first conversion of the embedded GGUF takes ~30 s; sharing the cache folder (HEXA_CACHE_DIR,
else the user cache from ``app.locations``) keeps later runs fast.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

DEV_DATA = Path(__file__).resolve().parents[3] / "shared" / "bench" / "dev.jsonl"


def _cache_dir() -> Path:
    env = os.environ.get("HEXA_CACHE_DIR")
    if env:
        return Path(env)
    try:
        from app.locations import locations

        return locations().cache
    except Exception:  # the app package is not importable: fall back to a fixed temp folder
        return Path(os.environ.get("TMPDIR", "/tmp")) / "hexa-test-cache"


@pytest.fixture(scope="session")
def engine():
    from engine import Engine

    return Engine.load(None, cache_dir=_cache_dir(), backend="torch")


@pytest.fixture(scope="session")
def dev_cases() -> list[dict]:
    """A few development prompts (Spec-Bench style); a small built-in set if the file is absent."""
    if DEV_DATA.exists():
        rows = [json.loads(line) for line in DEV_DATA.read_text().splitlines() if line.strip()]
        by_task: dict[str, list[dict]] = {}
        for r in rows:
            by_task.setdefault(r["task"], []).append(r)
        return [by_task[t][0] for t in ("summary", "rag", "chat") if t in by_task]
    text = ("The city council met on Tuesday to discuss the new bridge. The bridge will connect the "
            "north bank to the old town and is expected to cost 40 million dollars. ")
    return [{"id": "builtin-summary", "task": "summary", "turns": ["Summarize: " + text * 6]},
            {"id": "builtin-chat", "task": "chat", "turns": ["Write a short poem about the sea."]}]
