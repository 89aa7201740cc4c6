"""Shared fixtures. ``real_engine``: one Engine with the embedded model for the whole session."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def real_engine(tmp_path_factory):
    try:
        from engine import Engine
    except ImportError as exc:  # the engine package is not complete yet
        pytest.skip(f"engine.Engine not available: {exc}")
    return Engine.load(None, cache_dir=tmp_path_factory.mktemp("model-cache"), backend="torch")
