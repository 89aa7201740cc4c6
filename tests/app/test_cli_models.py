"""``hexa models``: the models found in the usual places with size, architecture, quantization
and whether hexa runs them; paths loaded before are remembered."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.cli import main
from app.model_catalog import find_models, remember, remembered
from support.synthetic_gguf import write_gguf
from support.tui_helpers import locations_in


@pytest.fixture
def home(tmp_path, monkeypatch):
    for name in ("CONFIG", "DATA", "LOG"):
        monkeypatch.setenv(f"HEXA_{name}_DIR", str(tmp_path / name.lower()))
    monkeypatch.setenv("HEXA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    return tmp_path


def test_models_lists_what_is_found_with_its_header_facts(home, capsys):
    models = home / "data" / "models"
    (models / "more").mkdir(parents=True)
    write_gguf(models / "tiny-llama.gguf", "llama", file_type=15)          # Q4_K_M
    write_gguf(models / "more" / "phi-tiny.gguf", "phi3", file_type=7)
    write_gguf(models / "quantized.gguf", "qwen2", file_type=12, after_vocab=True)   # Q3_K_M, as llama.cpp writes it
    folder = models / "qwen-folder"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2", "torch_dtype": "bfloat16"}))
    elsewhere = home / "elsewhere.gguf"
    write_gguf(elsewhere, "qwen3")
    remember(locations_in(home), str(elsewhere))

    assert main(["models", "--all", "--json"]) == 0
    found = {Path(m["path"]).name if m["path"] else "(default)": m for m in json.loads(capsys.readouterr().out)}
    assert set(found) == {"(default)", "tiny-llama.gguf", "phi-tiny.gguf", "quantized.gguf", "qwen-folder", "elsewhere.gguf"}
    assert found["quantized.gguf"]["quant"] == "Q3_K_M"
    assert (found["tiny-llama.gguf"]["architecture"], found["tiny-llama.gguf"]["quant"]) == ("llama", "Q4_K_M")
    assert found["tiny-llama.gguf"]["supported"] and found["qwen-folder"]["quant"] == "bfloat16"
    assert not found["phi-tiny.gguf"]["supported"] and "not supported" in found["phi-tiny.gguf"]["problem"]
    assert found["elsewhere.gguf"]["where"] == "used before"
    assert found["(default)"]["quant"] == "Q4_1" and found["(default)"]["size_mb"] > 50

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "tiny-llama.gguf" in out and "Q3_K_M" in out and "phi-tiny" not in out and "1 more that hexa cannot run" in out
    assert out.splitlines()[1].startswith("*")                 # the configured one: the default


def test_remembered_paths_are_most_recent_first_and_missing_ones_skipped(tmp_path):
    locs = locations_in(tmp_path)
    a, b = write_gguf(tmp_path / "a.gguf", "llama"), write_gguf(tmp_path / "b.gguf", "llama")
    remember(locs, str(a))
    remember(locs, str(b))
    remember(locs, str(a))
    remember(locs, "HuggingFaceTB/SmolLM2-135M-Instruct")       # a hub id is not a path
    assert remembered(locs) == [str(a.resolve()), str(b.resolve())]
    b.unlink()
    assert [m.path for m in find_models(locs) if m.where == "used before"] == [str(a.resolve())]


@pytest.mark.slow
def test_a_loaded_model_is_remembered(tmp_path):
    from app.loading import load_engine
    from app.settings import Settings
    from engine.model.source import embedded_gguf

    model = tmp_path / embedded_gguf().name     # the same cache entry as the embedded model
    os.symlink(embedded_gguf(), model)
    locs = locations_in(tmp_path)
    locs = type(locs)(locs.config, locs.data, Path(os.environ["HEXA_CACHE_DIR"]), locs.logs)
    engine = load_engine(Settings(model=str(model), threads=1), locs)
    assert engine is not None and remembered(locs) == [str(model.resolve())]
