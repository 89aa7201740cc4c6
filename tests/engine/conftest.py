"""Engine test fixtures. The real ``engine`` itself comes from tests/conftest.py (one per session)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

DEV_DATA = Path(__file__).resolve().parents[3] / "shared" / "bench" / "dev.jsonl"


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


@pytest.fixture(scope="session")
def kernel(tmp_path_factory):
    """The native kernels, loaded from a cache folder of their own (a library apart from the session
    engine's: its own pool and settings), the build itself shared with the session's cache both
    ways: one ~35 s compile a session where there were two (the test modules that use it skip
    themselves on a CPU without AVX2/FMA/F16C)."""
    from engine.runtime.kernels import native_kernel

    own = tmp_path_factory.mktemp("kernel-cache") / "kernels"
    shared = Path(os.environ["HEXA_CACHE_DIR"]) / "kernels"   # tests/conftest.py's, the engine's
    own.mkdir()
    for built in shared.glob("native-*.so"):
        shutil.copy2(built, own)
    k, why_not = native_kernel(own.parent, threads=2)
    assert k is not None, why_not
    built = Path(k.library_path)
    if not (shared / built.name).exists():          # built here first: the engine's load finds it
        shared.mkdir(parents=True, exist_ok=True)
        part = shared / (built.name + ".part")
        shutil.copy2(built, part)
        part.replace(shared / built.name)
    return k
