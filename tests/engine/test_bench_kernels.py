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
    assert bench.main(["--types", "Q4_K,Q6_K", "--shapes", "48x512", "--rows", "1,3", "--reps", "1",
                       "--json", str(out), "--cache", os.environ["HEXA_CACHE_DIR"]]) == 0
    text = capsys.readouterr().out
    assert "Q4_K 48x512" in text and "Q6_K 48x512" in text
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
