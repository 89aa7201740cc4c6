"""``python -m engine.bench.kernels``: the builds' cost by rows, compared in one process."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.bench import kernels as bench
from engine.runtime.kernels import host_isa

pytestmark = pytest.mark.slow   # compiles the kernels of every build it compares


def test_one_weight_at_a_time_on_every_build(capsys, tmp_path):
    if host_isa()[0] is None:
        pytest.skip(f"no native kernels here: {host_isa()[1]}")
    out = tmp_path / "k.json"
    assert bench.main(["--types", "q4_k,Q6_K", "--shapes", "48x512", "--rows", "1,3", "--reps", "1",
                       "--json", str(out), "--cache", os.environ["HEXA_CACHE_DIR"]]) == 0
    text = capsys.readouterr().out
    assert "Q4_K 48x512" in text and "Q6_K 48x512" in text        # --types in any case
    import json
    rows = json.loads(out.read_text())
    assert [r["rows"] for r in rows] == [1, 3, 1, 3] and all(ms > 0 for r in rows for ms in r["ms"].values())


def test_random_blocks_rebuild_ggmls_weights():
    """The bench's weights are real GGUF blocks: ggml's dequantization reads them."""
    import numpy as np
    from gguf import GGMLQuantizationType as T
    from gguf import quants
    for kind in ("Q4_K", "Q6_K", "Q5_0"):
        data = bench.random_blocks(kind, 4, 512)
        w = quants.dequantize(data, getattr(T, kind)).reshape(4, 512)
        assert np.isfinite(w).all() and w.std() > 0


def test_prompt_rows_and_the_share_of_the_int8_roof(capsys, tmp_path):
    """--prompt times hexa_linear_prefill; --roof measures the build's dot-product instruction
    alone (VNNI builds) and prints each call's share of it."""
    best = host_isa()[0]
    if best is None:
        pytest.skip(f"no native kernels here: {host_isa()[1]}")
    out = tmp_path / "k.json"
    assert bench.main(["--isas", best, "--types", "Q4_K", "--shapes", "48x512", "--rows", "2", "--reps", "1",
                       "--prompt", "--roof", "--json", str(out), "--cache", os.environ["HEXA_CACHE_DIR"]]) == 0
    text = capsys.readouterr().out
    import json
    (row,) = json.loads(out.read_text())
    assert row["weight"] == "Q4_K 48x512 prompt" and row["gmacs"][best] == pytest.approx(2 * 48 * 512 / row["ms"][best] / 1e6)
    top = bench.roof(best, Path(os.environ["HEXA_CACHE_DIR"]), 1)
    if best in ("avx-vnni", "avx512-vnni", "amx"):
        # one thread issues at least one 8-lane dot product a ns on any VNNI CPU
        assert top is not None and top > 32 and "% of roof" in text and "GMAC/s with these threads" in text
    else:
        assert top is None and "not measured" in text


def test_roof_and_prompt_are_for_single_weights(capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--model", "any.gguf", "--roof"])
    assert stop.value.code == 2 and "leave out --model" in capsys.readouterr().err


@pytest.mark.parametrize("args, words", [
    (["--types", "TQ2_0"], "--types TQ2_0: not a type the kernels keep as codes"),
    (["--types", "Q4_K", "--shapes", "1536x576"], "Q4_K needs NxK with K a multiple of 256"),
    (["--rows", "four"], "expected numbers"),
])
def test_bad_types_and_shapes_are_one_line(capsys, args, words):
    with pytest.raises(SystemExit) as stop:
        bench.main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and words in err[-1]
