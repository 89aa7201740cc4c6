"""engine.methods: the one list of decoding methods and backends, importable without torch."""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.methods import (BACKEND_HELP, BACKENDS, DEFAULT_BACKEND, DEFAULT_CONTEXT, DEFAULT_METHOD,
                            METHOD_HELP, METHOD_SPECS, METHODS, MethodSpec, check_backend, method_spec)

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def test_the_methods_and_backends_offered():
    """The public lists, written out: a method or backend added, dropped or reordered is a
    deliberate change of this test (the CLI, the settings and the bench offer these names)."""
    assert METHODS == ("vanilla", "sam", "hexa", "hexa-fill", "hexa-nocal", "hexa-noreuse", "hexa-nohist")
    assert (DEFAULT_METHOD, DEFAULT_BACKEND, BACKENDS) == ("hexa", "torch", ("torch", "qnn"))
    assert DEFAULT_CONTEXT == {"torch": 4096, "qnn": 1024}
    for text in (*METHOD_HELP.values(), *BACKEND_HELP.values()):
        assert text and "\n" not in text and len(text) < 120


def test_each_ablation_drops_exactly_the_technique_it_names():
    hexa = METHOD_SPECS["hexa"]
    assert METHOD_SPECS["vanilla"] is None and hexa == MethodSpec()      # hexa: every technique on
    assert METHOD_SPECS["hexa-nocal"] == replace(hexa, calibration=False)
    assert METHOD_SPECS["hexa-noreuse"] == replace(hexa, reuse=False)
    assert METHOD_SPECS["hexa-nohist"] == replace(hexa, history=False)
    assert METHOD_SPECS["hexa-fill"] == replace(hexa, fill=32, branches=8)
    sam = METHOD_SPECS["sam"]                                            # SAM-Decoding: linear, no extras
    assert (sam.mode, sam.context, sam.history, sam.calibration, sam.reuse) == ("linear", True, True, False, False)
    assert "without calibration" in METHOD_HELP["hexa-nocal"] and "without history" in METHOD_HELP["hexa-nohist"]


def test_unknown_names_are_one_line_user_errors():
    assert method_spec("hexa") is METHOD_SPECS["hexa"] and check_backend("qnn") == "qnn"
    with pytest.raises(EngineError, match="warp-drive.*vanilla, sam, hexa") as info:
        method_spec("warp-drive")
    assert "\n" not in str(info.value)
    with pytest.raises(EngineError, match="npu.*torch, qnn"):
        check_backend("npu")


def test_no_second_list_of_methods_in_the_engine():
    """Every other module takes the names from engine.methods."""
    found = {p.relative_to(ENGINE).as_posix() for p in ENGINE.rglob("*.py")
             if re.search(r"""["']hexa-nocal["']""", p.read_text(encoding="utf-8"))}
    assert found == {"methods.py"}


def test_the_package_exports_its_api_and_loads_engine_lazily():
    import engine
    from engine import BACKENDS as B, METHODS as M, Done, Engine, EngineError as E, Notice, Prefill, Step, Text

    assert (M, B, E) == (METHODS, BACKENDS, EngineError) and Engine.__name__ == "Engine"
    assert all(cls.__module__ == "engine.events" for cls in (Done, Notice, Prefill, Step, Text))
    with pytest.raises(AttributeError):
        engine.Nothing  # noqa: B018


def test_bench_offers_the_engine_methods_and_its_peers():
    from engine.bench.methods import PEERS, EngineMethod, make_method

    for m in METHODS:
        assert isinstance(make_method(m, engine=None), EngineMethod)
    with pytest.raises(EngineError, match="unknown bench method 'nope'"):
        make_method("nope", engine=None)
    assert not set(PEERS) & set(METHODS)


@pytest.mark.slow
def test_methods_events_and_errors_import_without_torch():
    code = ("import engine.methods, engine.events, engine.errors, os, sys; "
            "assert 'torch' not in sys.modules, 'torch was imported'; "
            "assert os.environ['OMP_WAIT_POLICY'] == 'PASSIVE'")
    env = {k: v for k, v in __import__("os").environ.items() if k != "OMP_WAIT_POLICY"}
    r = subprocess.run([sys.executable, "-c", code], cwd=ENGINE.parent, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
