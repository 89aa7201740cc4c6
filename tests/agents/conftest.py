"""A real memory store per test, on the session's real engine tokenizer."""
from __future__ import annotations

import pytest


@pytest.fixture
def memory(tmp_path, real_engine):
    from memory import Memory

    mem = Memory.open(tmp_path / "data", tokenizer=real_engine.encode)
    yield mem
    mem.close()
