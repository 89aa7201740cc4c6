"""The harness tests drive the virtual phone with the phone tests' helpers (phone_ui)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

PHONE_TESTS = str(Path(__file__).resolve().parents[1] / "phone")
if PHONE_TESTS not in sys.path:
    sys.path.insert(0, PHONE_TESTS)


@pytest.fixture(scope="session")
def fresh_state() -> dict:
    from agents.phone.device.phone import VirtualPhone

    return VirtualPhone().state()
