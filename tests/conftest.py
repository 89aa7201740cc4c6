"""Shared fixtures.

The real embedded model is loaded once per session (``engine``; ``real_engine`` is the same
object). Its converted cache lives in ``.test-cache/`` at the repository root so a second test run
does not convert it again. Tests never touch the user's own hexa folders.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_CACHE = Path(os.environ.get("HEXA_TEST_CACHE", ROOT / ".test-cache"))

# Keep every test away from the real user folders, before any hexa module resolves them.
_SANDBOX = Path(tempfile.mkdtemp(prefix="hexa-tests-"))
for _name in ("CONFIG", "DATA", "LOG"):
    os.environ[f"HEXA_{_name}_DIR"] = str(_SANDBOX / _name.lower())
os.environ["HEXA_CACHE_DIR"] = str(TEST_CACHE)


@pytest.fixture(scope="session")
def engine():
    from engine import Engine

    return Engine.load(None, cache_dir=TEST_CACHE)


@pytest.fixture(scope="session")
def real_engine(engine):
    return engine
