"""GGUF blocks into the kernels' code layouts (``engine/model/gguf_codes.py``): every native type rebuilds
ggml's own dequantized weights exactly, and the packed bytes are the layout the kernels read."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import quants

from engine.bench.kernels import random_blocks as blocks
from engine.model.gguf_codes import (HEAD_F16, HEAD_K, K_HEADS, NATIVE, TABLE_SHIFT, decode, k_factors, layout,
                                     pack, rebuild, table)
from engine.model.gguf_model import _unpermute


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


@pytest.mark.parametrize("kind", sorted(NATIVE))
def test_rebuilt_weights_are_ggmls_dequantized_weights(kind):
    rows, K = 19, 512
    data = blocks(kind, rows, K)
    d, m, q = decode(kind, data, rows, K)
    mine = rebuild(NATIVE[kind], d, m, q)
    ref = quants.dequantize(data, getattr(T, kind)).reshape(rows, K).astype(np.float32)
    # equal values; bits too, but for the sign of a zero (ggml's Q4_0 (q - 8) * d is -0 for d < 0)
    assert np.array_equal(mine, ref)
    assert ((mine.view(np.uint32) == ref.view(np.uint32)) | (ref == 0)).all()
    lo, hi = {2: (0, 15), 3: (-8, 7), 4: (0, 15), 5: (0, 31), 6: (-32, 31), 7: (-128, 127), 8: (-128, 127), 9: (-16, 15),
              10: (-127, 127), 11: (-127, 127)}[layout(NATIVE[kind])]
    exact = {"Q2_K": (0, 3), "Q3_K": (-4, 3), "IQ4_NL": (-127, 113), "IQ4_XS": (-127, 113), "IQ3_S": (0, 15),
             "IQ3_XXS": (-62, 62), "IQ2_XXS": (-43, 43), "IQ2_XS": (-43, 43), "IQ2_S": (-43, 43),
             "IQ1_S": (-9, 9), "IQ1_M": (-9, 9)}
    if kind in exact:   # the codes these types take reach their layout's values, and stay in them
        assert (int(q.min()), int(q.max())) == exact[kind]
    assert int(q.min()) >= lo and int(q.max()) <= hi
    if layout(NATIVE[kind]) >= 10:   # table codes: every code one of the table's values
        assert np.isin(q, table(NATIVE[kind])).all()


def test_code_tables_are_the_kernels(kernel):
    """layout.h's CODE_TABLE, which the kernels look table codes up in, holds the GGUF's values
    that the packer indexes"""
    out = np.zeros(16, np.int8)
    for number in sorted({bits >> TABLE_SHIFT for bits in NATIVE.values() if layout(bits) >= 10}):
        assert kernel.fn["hexa_code_table"](number, out.ctypes.data) == 0
        assert out.tolist() == table(number << TABLE_SHIFT | 10).tolist()
    assert kernel.fn["hexa_code_table"](4, out.ctypes.data) == kernel.fn["hexa_code_table"](-1, out.ctypes.data) == -1


def test_llama_rows_are_unpermuted_as_transformers_does():
    """llama.cpp's converter permutes rows (h, 2, D/2) -> (h, D/2, 2); the index undoes it."""
    heads, D = 3, 8
    hf = np.arange(heads * D)
    gguf_rows = hf.reshape(heads, 2, D // 2).swapaxes(1, 2).reshape(-1)   # convert_hf_to_gguf's permute
    assert gguf_rows[_unpermute(heads * D, heads)].tolist() == hf.tolist()


@pytest.mark.parametrize("kind", sorted(NATIVE))
def test_packed_codes_are_the_layout_the_kernels_read(kernel, kind):
    from engine.runtime.kernels import PackedWeight

    rows, K = 37, 256                        # a panel tail (37 = 2 x 16 + 5)
    d, m, q = decode(kind, blocks(kind, rows, K, seed=1), rows, K)
    w = rebuild(NATIVE[kind], d, m, q)
    codes, bits = pack(NATIVE[kind], d, m, q, compact=False)
    assert bits == NATIVE[kind]
    packed = PackedWeight(None, (rows, K), (codes, bits), kernel)
    assert np.array_equal(packed[np.arange(rows)], w)          # hexa_unpack_rows reads them back
    x = randn(3, K)
    assert np.allclose(kernel.linear(x, packed), x @ w.T, atol=1e-4)
    fp32 = kernel.pack(w)
    if fp32.quant is not None and fp32.bits == NATIVE[kind]:   # hexa_pack_quant recovered the same codes
        assert np.array_equal(kernel.linear(x, packed), kernel.linear(x, fp32))


def test_parts_of_several_types_keep_their_weights_in_layout_7(kernel):
    """Q4_K_M's fused q/k/v: Q4_K and Q6_K parts together in layout 7, every weight exact."""
    from engine.model.gguf_codes import as_layout7
    from engine.runtime.kernels import PackedWeight

    K, parts = 256, [("Q4_K", 20), ("Q6_K", 9), ("Q8_0", 16), ("Q5_1", 3)]
    decoded = [decode(kind, blocks(kind, rows, K, seed=i), rows, K) for i, (kind, rows) in enumerate(parts)]
    want = np.concatenate([rebuild(NATIVE[kind], *x) for (kind, _), x in zip(parts, decoded)])
    d, m, m2, q = (np.concatenate([x[i] for x in (as_layout7(NATIVE[k], *y) for (k, _), y in zip(parts, decoded))])
                   for i in range(4))
    assert np.array_equal(rebuild(7, d, m, q, m2), want)
    rows = len(want)
    codes, bits = pack(7, d, m, q, m2)
    assert bits == 7                                            # K-quant and fp32 heads: no compact form
    packed = PackedWeight(None, (rows, K), (codes, bits), kernel)
    assert np.array_equal(packed[np.arange(rows)], want)
    x = randn(5, K)
    assert np.allclose(kernel.linear(x, packed), x @ want.T, atol=1e-4)


def test_a_q2k_files_fused_projection_keeps_its_weights_in_layout_2(kernel):
    """A Q2_K file's q and k (Q2_K) with its v (Q3_K, or Q4_K where heads are grouped): its mins per
    16 inputs fit no other layout, so the parts go to layout 2 (Q3_K's codes + 8, m = -8d), every
    weight exact, the K-quants' heads compact; Q2_K beside 5- to 8-bit parts stays fp32."""
    from engine.model.gguf_codes import as_layout2
    from engine.model.gguf_model import _mix_layout
    from engine.runtime.kernels import PackedWeight

    K, parts = 512, [("Q2_K", 20), ("Q3_K", 9), ("Q4_K", 16), ("Q2_K", 5)]
    datas = [blocks(kind, rows, K, seed=i) for i, (kind, rows) in enumerate(parts)]
    decoded = [decode(kind, data, rows, K) for (kind, rows), data in zip(parts, datas)]
    want = np.concatenate([rebuild(NATIVE[kind], *x) for (kind, _), x in zip(parts, decoded)])
    assert _mix_layout({NATIVE[kind] for kind, _ in parts}) == 2
    assert _mix_layout({NATIVE["Q2_K"], NATIVE["Q6_K"]}) is None and _mix_layout({NATIVE["Q2_K"]}) == 2
    two = [as_layout2(NATIVE[kind], *x, k=k_factors(kind, data, rows, K))
           for (kind, rows), x, data in zip(parts, decoded, datas)]
    d, m, q = (np.concatenate([x[i] for x in two]) for i in range(3))
    k = tuple(np.concatenate([x[3][i] for x in two], axis=1) for i in (0, 1))
    assert np.array_equal(rebuild(2, d, m, q), want)
    rows = len(want)
    codes, bits = pack(2, d, m, q, k=k)
    assert bits == 2 | HEAD_K
    packed = PackedWeight(None, (rows, K), (codes, bits), kernel)
    assert np.array_equal(packed[np.arange(rows)], want)
    x = randn(5, K)
    assert np.allclose(kernel.linear(x, packed), x @ want.T, atol=1e-4)


@pytest.mark.parametrize("kind", sorted(NATIVE))
@pytest.mark.parametrize("rows", [37, 53])
def test_compact_heads_give_the_fp32_heads_bits_in_fewer_bytes(kernel, kind, rows):
    """HEAD_F16 (the legacy types) and HEAD_K (the K-quants) hold the same head values: every
    kernel gives the bits it gives on the fp32 head (decoding's integer dot products, the exact
    kernels under and over HEXA_QUANT_ROWS, row lookups), from fewer bytes."""
    from engine.runtime.kernels import PackedWeight

    K = 512
    data = blocks(kind, rows, K, seed=rows)
    d, m, q = decode(kind, data, rows, K)
    full, bits = pack(NATIVE[kind], d, m, q, compact=False)
    small, compact_bits = pack(NATIVE[kind], d, m, q, k=k_factors(kind, data, rows, K))
    assert compact_bits == NATIVE[kind] | (HEAD_K if kind in K_HEADS else HEAD_F16)
    assert small.nbytes == kernel.fn["hexa_quant_bytes"](compact_bits, rows, K) < full.nbytes
    a = PackedWeight(None, (rows, K), (full, bits), kernel)
    b = PackedWeight(None, (rows, K), (small, compact_bits), kernel)
    ids = np.array([0, rows - 1, 16, 5])
    assert np.array_equal(a[ids], b[ids])
    for M in (1, 3, 8, 13, 40):
        x = randn(M, K, seed=M)
        for exact in (True, False):
            assert np.array_equal(kernel.linear(x, a, exact=exact), kernel.linear(x, b, exact=exact)), (M, exact)


def test_compact_bytes_per_weight():
    """What a decoding step streams per weight (a panel of 16 rows, K = 4096): the GGUF's own
    sizes within a few percent."""
    rows, K = 16, 4096
    sizes = {}
    for kind in sorted(NATIVE):
        data = blocks(kind, rows, K)
        d, m, q = decode(kind, data, rows, K)
        sizes[kind] = pack(NATIVE[kind], d, m, q, k=k_factors(kind, data, rows, K))[0].nbytes / (rows * K)
    assert sizes["Q4_1"] == sizes["Q4_0"] == 0.625            # GGUF: 0.5625 / 0.625
    assert sizes["Q4_K"] == pytest.approx(0.5938, abs=1e-4)    # GGUF: 0.5625
    assert sizes["Q6_K"] == pytest.approx(0.8438, abs=1e-4)    # GGUF: 0.8203 (planes: 1.0938 as bytes)
    assert sizes["Q5_K"] == pytest.approx(0.7188, abs=1e-4)    # GGUF: 0.6875
    assert sizes["Q5_0"] == 0.6875                            # GGUF: 0.6875 (1.0625 as bytes)
    assert sizes["Q5_1"] == 0.75                              # GGUF: 0.75
    assert sizes["Q8_0"] == 1.0625                            # GGUF: 1.0625
    # held in layouts of more bits than their own: 1.4x the GGUF's bytes for Q3_K, 2.1x for Q2_K, 1.3-2.2x for the
    # IQ3 and IQ2 types (as fp32 panels: 4 bytes a weight; in Q8_0's bytes 1.05-1.14)
    assert sizes["Q3_K"] == pytest.approx(0.5938, abs=1e-4)    # GGUF: 0.4297 (in Q6_K's layout: 0.8438)
    assert sizes["Q2_K"] == pytest.approx(0.6875, abs=1e-4)    # GGUF: 0.3281 (a d and an m per 16 inputs)
    assert sizes["IQ4_NL"] == 0.5625                          # GGUF: 0.5625 (as Q8_0's bytes: 1.0625)
    assert sizes["IQ4_XS"] == 0.546875                        # GGUF: 0.5312 (1.0469)
    assert sizes["IQ3_XXS"] == sizes["IQ2_XXS"] == sizes["IQ4_XS"]                    # GGUF: 0.3828, 0.2578
    assert sizes["IQ3_S"] == sizes["Q4_K"]                                            # GGUF: 0.4297 (2u - 15: layout 4)
    assert sizes["IQ2_XS"] == sizes["IQ2_S"] == pytest.approx(0.6406, abs=1e-4)       # GGUF: 0.2891, 0.3203
    assert sizes["IQ1_S"] == sizes["IQ4_XS"] and sizes["IQ1_M"] == sizes["IQ2_XS"]    # GGUF: 0.1953, 0.2188


def test_a_big_tensor_is_packed_in_slices_into_one_buffer(kernel, monkeypatch):
    """An embedding of many rows is packed ~4M weights at a time, each slice written where its
    panels go: the bytes of packing it whole; slices whose compact heads differ are packed again
    with the head packing it whole chooses (here fp32 heads, one layout for all)."""
    import types

    from engine.model import gguf_model

    rows, K = 16 * 1100 + 5, 256            # two slices (16,384 rows: ~4M weights), the second ending mid-panel
    data = blocks("Q4_K", rows, K, seed=7)
    w = gguf_model.Weights(types.SimpleNamespace(tensors=[], data=None), types.SimpleNamespace(model_type="x"), kernel)
    whole = pack(NATIVE["Q4_K"], *decode("Q4_K", data, rows, K), k=k_factors("Q4_K", data, rows, K))
    sliced = w._sliced([("Q4_K", data, rows, K)], NATIVE["Q4_K"], rows, K)
    assert sliced[1] == whole[1] == NATIVE["Q4_K"] | HEAD_K and np.array_equal(sliced[0], whole[0])
    calls = iter(range(100))
    real = gguf_model.pack
    monkeypatch.setattr(gguf_model, "pack", lambda *a, **k: real(*a, **(k if next(calls) % 2 else k | {"compact": False})))
    again = w._sliced([("Q4_K", data, rows, K)], NATIVE["Q4_K"], rows, K)
    fp32_heads = real(NATIVE["Q4_K"], *decode("Q4_K", data, rows, K), compact=False)
    assert again[1] == fp32_heads[1] == NATIVE["Q4_K"] and np.array_equal(again[0], fp32_heads[0])


@pytest.mark.parametrize("kinds", [("Q4_K", "Q4_K", "Q6_K"), ("Q2_K", "Q2_K", "Q3_K"), ("Q5_0", "Q8_0", "Q8_0")])
def test_a_fused_projection_packed_part_by_part_is_the_one_packed_whole(kernel, kinds):
    """q, k and v of different types (layouts 7, 2 and 8) packed slice by slice within each part:
    the bytes of stacking the parts and packing them at once."""
    import types

    from engine.model import gguf_model

    K, sizes = 256, (16 * 1100, 16 * 70, 16 * 70 + 3)       # the first part in two slices
    parts = [(kind, blocks(kind, n, K, seed=i), n, K) for i, (kind, n) in enumerate(zip(kinds, sizes))]
    b = gguf_model._mix_layout({NATIVE[kind] for kind in kinds})
    w = gguf_model.Weights(types.SimpleNamespace(tensors=[], data=None), types.SimpleNamespace(model_type="x"), kernel)
    N = sum(sizes)
    assert len(gguf_model._slices(parts, K)) == 4
    whole = gguf_model._codes(b, [(kind, data, n) for kind, data, n, _ in parts], K, True, True, True)
    sliced = w._sliced(parts, b, N, K)
    assert sliced[1] == whole[1] and np.array_equal(sliced[0], whole[0])


def _file_pages_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssFile")) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc here")
def test_a_big_tensor_read_in_slices_leaves_its_pages_out_of_the_resident_set(kernel, tmp_path):
    """Each slice's blocks leave the resident set once packed (madvise): reading a big embedding
    whole kept all of its pages resident beside the packed weight (Gemma-3-270M: 170 MB more)."""
    import types

    from engine.bench.random_gguf import Shape, write
    from engine.model import gguf_model
    from engine.model.gguf_tensors import TensorFile

    path = write(tmp_path / "e.gguf", Shape("qwen2", 512, 1, 8, 2, 64, 512), "Q8_0")    # 49,152 x 512 Q8_0
    r = TensorFile(path)
    w = gguf_model.Weights(r, types.SimpleNamespace(model_type="qwen2"), kernel)
    _, data, N, K = w.rows("token_embd.weight")
    before = _file_pages_mb()
    codes, _ = w._sliced([("Q8_0", data, N, K)], NATIVE["Q8_0"], N, K)
    tensor_mb = data.nbytes / 2**20                                     # 26.7 MB, 4 slices
    assert codes.nbytes > 0 and _file_pages_mb() - before < tensor_mb / 3
