"""Every architecture against llama.cpp on GGUFs written at test time with random weights
(``engine/bench/random_gguf.py``): qwen2 (biases), qwen3 (q/k norm, 128-dim heads), llama
(llama.cpp's q/k row order undone), gemma3 (256-dim heads, sliding window, GELU, post norms).
The widths are small so the test stays fast; ``hexa bench`` runs the real models' widths."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from engine import Done
from engine.bench.random_gguf import Shape, write

pytestmark = pytest.mark.slow
TEST_CACHE = Path(os.environ["HEXA_CACHE_DIR"])
SMALL = {
    "qwen2": Shape("qwen2", 256, 2, 4, 2, 64, 512),
    "qwen3": Shape("qwen3", 256, 2, 4, 2, 128, 512),
    "llama": Shape("llama", 256, 2, 4, 2, 64, 512, 500000.0),
    "gemma3": Shape("gemma3", 256, 2, 2, 1, 256, 512),
}


@pytest.fixture(scope="module", params=sorted(SMALL))
def random_engine(request):
    from engine import Engine
    folder = TEST_CACHE / "model-files"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"random-{request.param}-Q8_0.gguf"
    if not path.exists():
        write(path.with_suffix(".tmp"), SMALL[request.param], "Q8_0").rename(path)
    return request.param, Engine.load(str(path), cache_dir=TEST_CACHE, threads=2)


def test_speculative_decoding_is_plain_decoding(random_engine, dev_cases):
    name, engine = random_engine
    ids = engine.chat_ids([{"role": "user", "content": dev_cases[0]["turns"][0][:1500]}])
    runs = {m: next(e for e in engine.generate(ids, method=m, max_new_tokens=24) if isinstance(e, Done))
            for m in ("vanilla", "hexa")}
    assert runs["hexa"].token_ids == runs["vanilla"].token_ids, name


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                    reason="llama-cpp-python is not installed (make installs the peers extra)")
def test_logits_agree_with_llamacpp(random_engine, dev_cases):
    from engine.bench.agreement import compare
    name, engine = random_engine
    ids = [engine.tokenizer.convert_tokens_to_ids(engine.tokenizer.bos_token or "<|endoftext|>")]
    ids += engine.encode(dev_cases[0]["turns"][0])[:100]
    result = compare(engine, ids, skip=1)
    # measured 2026-11-24 on a 3-layer qwen3 of 512 wide: 96.7% top-1, max |Δ| 1.6% of the range
    assert result.top1 >= 0.85 and result.max_rel <= 0.1, (name, result.line())


def test_a_failing_quantizer_is_one_line(tmp_path):
    """The benchmark's model files come from llama.cpp's quantizer: when it fails (here on a file
    that is no GGUF; without llama_cpp, on the import) the tool says so in one line, and leaves
    no partial output behind."""
    from engine.bench.random_gguf import quantize_with_llamacpp

    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"not a gguf")
    with pytest.raises(SystemExit) as failed:
        quantize_with_llamacpp(bad, tmp_path / "out.gguf")
    message = str(failed.value)
    assert message.startswith("random_gguf: llama.cpp's quantizer failed on not-a-model.gguf: ")
    assert "\n" not in message and "Traceback" not in message
    assert not (tmp_path / "out.gguf").exists() and not (tmp_path / "out.tmp").exists()


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                    reason="llama-cpp-python is not installed (make installs the peers extra)")
@pytest.mark.parametrize("kind", ["Q3_K_M", "IQ4_XS", "IQ4_NL", "IQ3_M", "Q2_K"])
def test_q3_k_and_iq4_files_run_as_codes_and_agree_with_llamacpp(kind, dev_cases):
    """llama.cpp's Q3_K_M (Q3_K with Q4_K/Q5_K/Q6_K tensors), IQ4, IQ3_M (IQ3_S) and Q2_K (Q2_K with
    Q3_K/Q4_K/Q6_K) files: every matrix held as codes (Q3_K in layout 3, IQ4_NL/IQ4_XS as table
    codes, IQ3_S as Q4_K's, Q2_K in layout 2: no fp32 panels), speculative decoding
    equal to plain, the logits within the bounds above of llama.cpp's on the same file (measured
    2026-12-04 on a 2-layer Qwen2.5-1.5B-shaped Q3_K_M: 94.0% top-1, 2.35% of the range)."""
    import gguf
    from engine import Engine
    from engine.bench.agreement import compare
    from engine.bench.random_gguf import quantize_with_llamacpp
    from engine.model.gguf_codes import layout

    folder = TEST_CACHE / "model-files"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"random-qwen2-{kind}.gguf"
    if not path.exists():
        f16 = write(folder / "random-qwen2-F16.tmp.gguf", SMALL["qwen2"], "F16")
        quantize_with_llamacpp(f16, path, kind)
        f16.unlink()
    types = {t.tensor_type.name for t in gguf.GGUFReader(path).tensors}
    assert {"Q3_K_M": "Q3_K", "IQ4_XS": "IQ4_XS", "IQ4_NL": "IQ4_NL", "IQ3_M": "IQ3_S", "Q2_K": "Q2_K"}[kind] in types, types
    engine = Engine.load(str(path), cache_dir=TEST_CACHE, threads=2)
    model = engine.model
    held = [getattr(L, s) for L in model.layers for s in ("wqkv", "wo", "wgu", "wdown")] + [model.lm_head]
    assert all(w.quant is not None for w in held), [w.shape for w in held if w.quant is None]
    if kind.startswith("IQ4"):   # the IQ4 matrices as 4-bit table codes (layout 10), not Q8_0's bytes
        assert any(layout(w.bits) == 10 for w in held), [w.bits for w in held]
    if kind == "IQ3_M":          # IQ3_S in Q4_K's layout: q, k with a Q4_K v stay 4-bit codes, not 7's bytes
        assert all(layout(w.bits) == 4 for L in model.layers for w in (L.wqkv, L.wgu)), [L.wqkv.bits for L in model.layers]
    if kind == "Q2_K":           # its q, k and gate, up (Q2_K, mins per 16 inputs) with the v (Q3_K or Q4_K) in layout 2
        assert all(layout(w.bits) == 2 for L in model.layers for w in (L.wqkv, L.wgu)), [L.wqkv.bits for L in model.layers]
    ids = engine.chat_ids([{"role": "user", "content": dev_cases[0]["turns"][0][:1500]}])
    runs = {m: next(e for e in engine.generate(ids, method=m, max_new_tokens=24) if isinstance(e, Done))
            for m in ("vanilla", "hexa")}
    assert runs["hexa"].token_ids == runs["vanilla"].token_ids
    ids = [engine.tokenizer.convert_tokens_to_ids(engine.tokenizer.bos_token or "<|endoftext|>")]
    ids += engine.encode(dev_cases[0]["turns"][0])[:100]
    result = compare(engine, ids, skip=1)
    assert result.top1 >= 0.85 and result.max_rel <= 0.1, (kind, result.line())


def test_a_padded_vocabulary_has_the_real_models_size(dev_cases):
    """``real_vocab`` pads SmolLM2's 49,152 tokens to the shape's vocabulary (benchmarks of the
    real models' heads): the embedding and tied head take every row, no text becomes a padding
    token, and the logits over all of them agree with llama.cpp's on the same file."""
    from engine import Engine
    from engine.bench.random_gguf import VOCAB

    shape = Shape("qwen2", 256, 2, 4, 2, 64, 512, vocab=VOCAB + 832)
    folder = TEST_CACHE / "model-files"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "random-qwen2-padded-Q8_0.gguf"
    if not path.exists():
        write(path.with_suffix(".tmp"), shape, "Q8_0", real_vocab=True).rename(path)
    engine = Engine.load(str(path), cache_dir=TEST_CACHE, threads=2)
    assert engine.model.lm_head.shape[0] == shape.vocab, engine.model.lm_head.shape
    text = dev_cases[0]["turns"][0][:400] + f" <unused{VOCAB + 5}>"
    assert max(engine.encode(text)) < VOCAB
    if importlib.util.find_spec("llama_cpp") is not None:
        from engine.bench.agreement import compare
        ids = [engine.tokenizer.convert_tokens_to_ids("<|endoftext|>")] + engine.encode(text)[:60]
        result = compare(engine, ids, skip=1)
        assert result.top1 >= 0.85 and result.max_rel <= 0.1, result.line()
