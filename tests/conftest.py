"""Shared fixtures.

The real embedded model is loaded once per session (``engine``; ``real_engine`` is the same
object). Its converted cache lives in ``.test-cache/`` at the repository root so a second test run
does not convert it again. Tests never touch the user's own hexa folders.

Tiers: ``pytest -m "not slow"`` is the fast tier. A test that asks for the real model (``engine``,
``real_engine``) or the native kernels (``kernel``) is marked slow here, so none slips into the
fast tier by accident; tests that reach the real MiniLM, the HTP emulator or tmux mark themselves.
``-m bench`` is the benchmark tier (speed ratios; ``make bench``), left out of ``pytest -q`` by
pyproject's addopts. Shared helpers live in ``tests/support/``.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from support.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parent.parent
TEST_CACHE = Path(os.environ.get("HEXA_TEST_CACHE", ROOT / ".test-cache"))

# Keep every test away from the real user folders, before any hexa module resolves them.
_SANDBOX = Path(tempfile.mkdtemp(prefix="hexa-tests-"))
for _name in ("CONFIG", "DATA", "LOG"):
    os.environ[f"HEXA_{_name}_DIR"] = str(_SANDBOX / _name.lower())
os.environ["HEXA_CACHE_DIR"] = str(TEST_CACHE)

SLOW_FIXTURES = {"engine", "real_engine", "kernel"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def engine():
    from engine import Engine

    return Engine.load(None, cache_dir=TEST_CACHE)


@pytest.fixture(scope="session")
def real_engine(engine):
    return engine


@pytest.fixture(scope="session")
def tokenizer_engine():
    """The embedded model's tokenizer behind the engine's text methods, no weights (fast tier)."""
    from support.tokenizer import TokenizerEngine

    return TokenizerEngine(TEST_CACHE)


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()
