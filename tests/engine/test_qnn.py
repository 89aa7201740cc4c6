"""The qnn backend: graph construction (checked in fp32 on onnxruntime's CPU provider against the
engine's CPU forward), and generation on the real QNN HTP backend (Qualcomm's emulator on x86-64):
speculative decoding must give exactly the tokens of plain decoding on the same backend."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime_qnn")

from engine import Done, Engine, EngineError, Prefill  # noqa: E402
from engine.runtime import reference  # noqa: E402
from engine.runtime.profiling import CostCurve, CostModel  # noqa: E402
from engine.runtime.qnn.graphs import MASKED, build_block, save_block  # noqa: E402
from engine.runtime.qnn.session import load_graph  # noqa: E402
from engine.runtime.transformer import CompactTransformer  # noqa: E402



def _cpu_session(path: Path):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_block_graph_equals_the_reference_layers_in_fp32(engine, tmp_path, monkeypatch):
    """Two layers fed 5 real tokens padded to S=8, over 11 cached positions of a C=32 context,
    against the CPU model's fp32 reference layers (numpy). The graphs are built from raw weights
    (the CPU engine's are packed for its kernel)."""
    from engine.model.cache import ensure_cached   # the fp32 conversion the qnn graphs are built from
    m = CompactTransformer.load(ensure_cached(engine.source, engine.cache_dir / "models"))
    c = m.config
    first, last, S, C, past, n = 3, 5, 8, 32, 11, 5
    save_block(build_block(m, first, last, S, C), tmp_path / "b.onnx")
    sess = _cpu_session(tmp_path / "b.onnx")

    ids = np.random.default_rng(0).integers(0, 2000, past + n, dtype=np.int64)
    ref_cache = m.new_cache(past + n)
    inputs = []                          # the residual stream entering layer ``first``
    orig = reference.rmsnorm
    monkeypatch.setattr(reference, "rmsnorm", lambda x, w, eps: (inputs.append(x.copy()), orig(x, w, eps))[1])
    m.forward(ids, np.arange(past + n, dtype=np.int64), ref_cache)
    monkeypatch.undo()
    x_in, x_out = inputs[2 * first], inputs[2 * last]

    x = np.empty((S, c.hidden_size), np.float32)
    x[:n] = x_in[past:]
    x[n:] = x[n - 1]
    pos = np.concatenate([np.arange(past, past + n), np.full(S - n, past + n - 1)])
    mask = np.full((S, C + S), MASKED, np.float32)
    mask[:, :past] = 0
    mask[:, C:] = np.where(np.tril(np.ones((S, S), bool)), 0, MASKED)
    pk = np.zeros((last - first, c.num_kv_heads, C, c.head_dim), np.float32)
    pv = np.zeros_like(pk)
    pk[:, :, :past] = ref_cache.k[first:last, :, :past]
    pv[:, :, :past] = ref_cache.v[first:last, :, :past]
    group = c.num_heads // c.num_kv_heads
    out, k_new, v_new = sess.run(None, {"x": x, "cos": m.cos[pos], "sin": m.sin[pos],
                                        "mask": np.tile(mask, (group, 1)), "past_k": pk, "past_v": pv})
    scale = float(np.abs(x_out[past:]).max())
    assert np.abs(out[:n] - x_out[past:]).max() < 1e-4 * max(1.0, scale)
    assert np.allclose(k_new[:, :, :n], ref_cache.k[first:last, :, past:past + n], atol=1e-4)
    assert np.allclose(v_new[:, :, :n], ref_cache.v[first:last, :, past:past + n], atol=1e-4)


def test_a_damaged_context_binary_is_reported_and_removed(tmp_path):
    bad = tmp_path / "block.ctx.onnx"
    bad.write_bytes(b"not an onnx file")
    with pytest.raises(EngineError, match="cannot load QNN graph .* removed"):
        load_graph(bad, lambda p: None)
    assert not bad.exists()


@pytest.fixture(scope="module")
def qnn_engine(engine):
    # the same cache folder as the session's CPU engine: the compiled graphs are kept there
    return Engine.load(None, cache_dir=engine.cache_dir, backend="qnn", context_window=192)


PROMPT = ("Summarize: The cat sat on the mat. The cat sat on the mat because the mat was warm. "
          "The warm mat made the cat happy.")


def test_qnn_speculative_decoding_is_lossless_on_the_htp(qnn_engine):
    from support.scripted_backend import backend_members

    e = qnn_engine
    assert e.backend_name == "qnn" and "qnn htp" in e.model.kernel
    assert not [n for n in backend_members() if not hasattr(e.model, n)]       # the Backend contract
    # Size hexa's trees as on an NPU, where an 8-token graph costs about what a 1-token one does.
    # (The emulator's own curve, measured when the machine is busy, can make every draft look too
    # dear, and then this test would not exercise tree verification at all.)
    e._cost = CostModel({0: CostCurve([(1, 10.0), (8, 10.5)])})
    e._online_cost = None
    runs = {}
    # (``sam``'s linear drafts go through the same verification of a tree: left to the CPU tests,
    # its run here took 35 of this test's 106 s on the emulator)
    for method in ("vanilla", "hexa"):
        events = list(e.generate(PROMPT, max_new_tokens=14, method=method))
        prefill = [ev for ev in events if isinstance(ev, Prefill)]
        assert prefill and prefill[0].graph.startswith("qnn:S")
        runs[method] = events[-1]
        assert isinstance(runs[method], Done) and runs[method].new_tokens > 0
    assert runs["hexa"].token_ids == runs["vanilla"].token_ids
    # the copy-heavy prompt is drafted: fewer passes than tokens
    assert runs["hexa"].steps < runs["vanilla"].steps
    assert runs["hexa"].mean_accepted > 1.5


def test_progressive_switching_holds_one_graph_family_per_block(qnn_engine):
    m = qnn_engine.model
    assert m.progressive
    events = list(qnn_engine.generate(PROMPT, max_new_tokens=3, method="vanilla"))
    prefill = [ev for ev in events if isinstance(ev, Prefill)]
    assert prefill[-1].total_blocks == len(m.blocks)
    # decoding ran on G2 everywhere, and every block released its G1
    assert m.graphs.resident() == ["G2"] * len(m.blocks)
    # the next prefill takes G1 back (that reload is reported as exposed load time)
    m.begin_prefill(40)
    try:
        assert m.graphs.resident() == ["G1"] * len(m.blocks)
        assert m.switch_status.exposed_ms > 0
    finally:
        m.end_prefill()


def test_qnn_cost_curve_is_a_staircase_over_its_graphs(qnn_engine):
    from engine.runtime.profiling import profile_static_lengths

    curve = profile_static_lengths(qnn_engine.model, repeats=1)
    G2 = qnn_engine.model.decode_lengths[-1]
    assert qnn_engine.model.max_draft == G2 - 1
    assert curve(2) == curve(G2) >= curve(1) > 0          # any 2..G2 tokens cost one G2 pass


def test_qnn_context_is_static(qnn_engine):
    with pytest.raises(EngineError, match="context of 192"):
        qnn_engine.model.new_cache(193)


def test_qnn_fp16_logits_follow_the_fp32_model(engine, qnn_engine, monkeypatch):
    """The HTP computes in fp16; SmolLM2's attention-sink tokens carry a ~25,000 activation whose
    RMSNorm once overflowed / was flushed to zero, which derailed every later token. The logits
    after a prompt must stay close to the fp32 CPU model's."""
    ids = engine.chat_ids([{"role": "user", "content": "Repeat this list exactly: apple, banana, "
                                                       "cherry, apple, banana, cherry."}])
    pos = np.arange(len(ids), dtype=np.int64)
    monkeypatch.setattr(engine.model, "exact", True)   # the fp32 reference, not decoding's int8
    tokens = np.array(ids, np.int64)
    ref = engine.model.logits(engine.model.forward(tokens, pos, engine.model.new_cache(len(ids)))[-1:])[0]
    q = qnn_engine.model
    q.begin_prefill(len(ids))                # the path generation takes: G1 chunks
    try:
        got = q.logits(q.forward(tokens, pos, q.new_cache(len(ids)))[-1:])[0]
    finally:
        q.end_prefill()
    assert got.argmax() == ref.argmax()
    # near-ties may trade places in fp16; the broken norm gave another argmax and errors > 1
    assert len(set(np.argsort(-got)[:5].tolist()) & set(np.argsort(-ref)[:5].tolist())) >= 4
    assert np.abs(got - ref).max() < 0.5
