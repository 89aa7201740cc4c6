"""Knobs and load-time messages: HEXA_THREADS and HEXA_LINEAR belong to the app's settings (the
engine takes ``threads`` and ``EngineOptions``, and reads no environment variable), and the first
start says when it compiles the native kernels."""
from __future__ import annotations

import os

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from engine.errors import EngineError
from engine.runtime.kernels import COMPILING, host_isa
from engine.model.config import ModelConfig
from engine.options import EngineOptions
from engine.threads import configure, usable_cores
from engine.runtime import reference
from engine.runtime.transformer import CompactTransformer


def blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_threads_none_means_every_usable_core_whatever_the_environment(monkeypatch):
    monkeypatch.setenv("HEXA_THREADS", "1")     # the app's setting: parsed there, passed as threads
    with threadpool_limits(None):               # the limits as they were, afterwards
        assert configure(None) == usable_cores() and blas_threads() == {usable_cores()}
        assert configure(1) == 1 and blas_threads() == {1}


def test_the_engine_ignores_hexa_linear_in_the_environment(monkeypatch, tmp_path):
    """HEXA_LINEAR is the settings' name for engine.linear: the engine itself never reads it (a bad
    value reaches the user from the settings, before load: tests/app/test_settings_advanced.py)."""
    monkeypatch.setenv("HEXA_LINEAR", "fast")
    monkeypatch.setenv("HEXA_DECODE", "fast")
    assert EngineOptions().linear == "native" and EngineOptions().decode == "int8"
    assert tiny_model("native").exact is False


@pytest.mark.parametrize("bad", [{"linear": "fast"}, {"decode": "fp16"}, {"isa": "sse"}, {"spin_us": -1},
                                 {"spin_us": 2_000_000}, {"spin_us": True}])
def test_a_bad_engine_option_is_a_one_line_error_before_anything_loads(tmp_path, bad):
    """Direct callers of ``Engine.load`` (the settings check first, naming the file or variable)."""
    with pytest.raises(EngineError) as info:
        EngineOptions(**bad)
    assert "\n" not in str(info.value) and next(iter(bad)) in str(info.value)


def test_the_decode_option_reaches_the_model():
    assert tiny_model("numpy", decode="exact").exact and not tiny_model("numpy").exact
    with pytest.raises(EngineError, match="decode 'fp16'"):
        tiny_model("numpy", decode="fp16")


def tiny_model(linear: str, decode: str = "int8") -> CompactTransformer:
    config = ModelConfig("llama", vocab_size=32, hidden_size=16, intermediate_size=32, num_layers=1,
                         num_heads=2, num_kv_heads=1, head_dim=8, rms_eps=1e-5, max_positions=64,
                         tie_embeddings=True, attention_bias=False, rope={"rope_theta": 10000.0})
    g = np.random.default_rng(0)
    shapes = {"model.embed_tokens.weight": (32, 16), "model.norm.weight": (16,),
              "model.layers.0.input_layernorm.weight": (16,), "model.layers.0.post_attention_layernorm.weight": (16,),
              "model.layers.0.self_attn.q_proj.weight": (16, 16), "model.layers.0.self_attn.k_proj.weight": (8, 16),
              "model.layers.0.self_attn.v_proj.weight": (8, 16), "model.layers.0.self_attn.o_proj.weight": (16, 16),
              "model.layers.0.mlp.gate_proj.weight": (32, 16), "model.layers.0.mlp.up_proj.weight": (32, 16),
              "model.layers.0.mlp.down_proj.weight": (16, 32)}
    return CompactTransformer(config, {k: g.standard_normal(s, dtype=np.float32) for k, s in shapes.items()}, linear, decode)


def test_the_linear_choice_picks_the_library_kernel():
    m = tiny_model("numpy")
    assert m.linear is reference.linear and m.kernel == "numpy"
    assert tiny_model("native").kernel == "numpy"          # not packed until a native kernel is given
    ids = np.array([3, 1, 4, 1, 5])
    out = m.logits(m.forward(ids, np.arange(5), m.new_cache(8)))
    assert out.dtype == np.float32 and out.shape == (5, 32) and np.isfinite(out).all()


def test_the_cpu_runtime_states_its_backend_contract():
    from support.scripted_backend import BigramBackend, backend_members

    m = tiny_model("numpy")
    assert {"forward", "logits", "new_cache", "begin_prefill", "switch_status", "max_draft"} <= backend_members()
    for runtime in (m, BigramBackend()):
        assert not [n for n in backend_members() if not hasattr(runtime, n)], type(runtime)
    assert m.switch_status is None and m.decode_lengths == () and m.max_draft == 32
    assert m.prefill_graph == "torch:dynamic" and m.kernel_build == ""
    m.begin_prefill(10)
    m.end_prefill()


needs_avx2 = pytest.mark.skipif(host_isa()[1] is not None, reason=f"{host_isa()[1]}")


@needs_avx2
def test_compiling_the_native_kernels_is_announced_only_when_it_happens(monkeypatch, tmp_path):
    from engine.runtime import kernels

    def fake_build(out, isa, cc=None):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"not a library")            # "built": the load then fails, no compiler ran
        return None
    monkeypatch.setattr(kernels, "_build", fake_build)
    said: list[str] = []
    kernel, why = kernels.native_kernel(tmp_path, 1, said.append)
    assert kernel is None and "cannot load" in why and said == [COMPILING]
    said.clear()
    kernels.native_kernel(tmp_path, 1, said.append)       # cached now: nothing to compile
    assert said == []


@pytest.mark.slow
@needs_avx2
def test_first_load_reports_the_compile_through_progress(engine, monkeypatch, tmp_path):
    """The load's progress callback hears about the compile (about a minute on 2 cores, so the
    compiler is stood in for here) and about the fallback when it fails."""
    from engine import Engine
    from engine.runtime import kernels

    (tmp_path / "models").symlink_to(engine.cache_dir / "models", target_is_directory=True)
    monkeypatch.setattr(kernels, "_build", lambda out, isa, cc=None: ("compiling the kernel failed: test", False))
    said: list[str] = []
    e = Engine.load(None, cache_dir=tmp_path, threads=1, progress=said.append)
    assert COMPILING in said and any("native kernel unavailable" in m for m in said)
    assert e.model.native is None and "packed" not in e.model.kernel
    configure(engine.threads)
    said.clear()
    e = Engine.load(None, cache_dir=tmp_path, threads=engine.threads, progress=said.append,
                    options=EngineOptions(linear="numpy"))
    assert e.model.kernel == "numpy" and not [m for m in said if "kernel" in m]   # no native kernels tried
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_kv_option_picks_the_caches_values():
    """f16 where the native kernels run the layers in int8 arithmetic ("auto"), or as asked; the
    reference layers read an fp16 cache back as the fp32 values it holds."""
    m = tiny_model("numpy")                        # no native kernel: auto keeps fp32
    m.use_kv("auto")
    assert m.new_cache(4).k.dtype == np.float32
    ids = np.array([3, 1, 4, 1, 5])
    ref = m.logits(m.forward(ids, np.arange(5), m.new_cache(8)))
    m.use_kv("f16")
    cache = m.new_cache(8)
    assert cache.k.dtype == cache.v.dtype == np.float16 and cache.nbytes() == 2 * 8 * 8 * 2
    got = m.logits(m.forward(ids, np.arange(5), cache))
    assert np.allclose(got, ref, atol=1e-2) and not np.array_equal(got, ref)   # rounded, and close
    with pytest.raises(EngineError) as info:
        EngineOptions(kv="bf16")
    assert "kv" in str(info.value) and "f16" in str(info.value)


@pytest.mark.slow
def test_the_real_model_keeps_fp16_kv_in_int8_arithmetic_and_fp32_in_exact(real_engine):
    model = real_engine.model
    assert model.native is not None and not model.exact
    assert model.kv_dtype == np.float16 and model.new_cache(4).k.dtype == np.float16
    exact = CompactTransformer.__new__(CompactTransformer)
    exact.native, exact.exact, exact.kv = model.native, True, "auto"
    assert exact.kv_dtype == np.float32
    exact.use_kv("f16")
    assert exact.kv_dtype == np.float16
