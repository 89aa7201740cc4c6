"""A real memory store per test, counting tokens with the embedded model's real tokenizer (no
weights: a test that only needs the tokenizer stays in the fast tier)."""
from __future__ import annotations

import pytest


@pytest.fixture
def memory(tmp_path, tokenizer_engine):
    from memory import Memory

    mem = Memory.open(tmp_path / "data", tokenizer=tokenizer_engine.encode)
    yield mem
    mem.close()
