"""The bundled MiniLM on numpy (memory/bert.py) against sentence-transformers on the same folder.

Real model, both ways; what must hold: the same vectors (cosine > 0.99999), whatever the batch,
and no torch in a process that only embeds."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory.bert import BertEncoder, supports
from memory.embeddings import Embedder, _load, model_path

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

TEXTS = ["", "   ", "hello", "What did we decide about the dragon story last week?",
         "Résumé of Zürich's café — naïve ÉCOLE, 東京 and emoji 🐉",
         "def area(r):\n    return 3.14159 * r ** 2  # a circle's",
         "word " * 600,                                   # past max_seq_length (256): truncated
         "The cache keeps each weight's codes; tree rows equal plain steps bit for bit. " * 6,
         "Bananas are berries but strawberries are not.", "UPPER CASE and lower case"]


@pytest.fixture(scope="module")
def folder():
    return model_path()


def test_the_bundled_model_runs_on_numpy_with_sentence_transformers_vectors(folder):
    assert supports(folder)
    ours = BertEncoder(folder).encode(TEXTS, batch_size=4)
    theirs = _st(folder).encode(TEXTS, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)
    assert ours.shape == theirs.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    cos = (ours * theirs).sum(1)
    assert cos.min() > 0.99999, cos
    assert np.abs(np.linalg.norm(ours, axis=1) - 1).max() < 1e-5


def test_a_text_gets_the_same_vector_alone_or_in_any_batch(folder):
    enc = BertEncoder(folder)
    together = enc.encode(TEXTS, batch_size=32)
    for i, t in enumerate(TEXTS):
        alone = enc.encode([t])[0]
        assert float(alone @ together[i]) > 0.999999, t[:30]


def test_split_over_workers_or_not_the_vectors_agree(folder):
    """A batch split over the cores (rows and texts, one BLAS thread each) against one worker."""
    pooled, single = BertEncoder(folder, threads=2), BertEncoder(folder, threads=1)
    assert pooled.workers == 2 and single.workers == 1
    cos = (pooled.encode(TEXTS * 3) * single.encode(TEXTS * 3)).sum(1)
    assert cos.min() > 0.999999, cos


def test_embedder_uses_numpy_and_keeps_torch_out_of_the_process(tmp_path):
    code = ("import sys; from memory.embeddings import Embedder; e = Embedder(threads=1); "
            "v = e(['a note about dragons']); assert len(v[0]) == e.dimension == 384; "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(ROOT))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["False", "False"]


def test_another_pooling_is_left_to_sentence_transformers(folder, tmp_path):
    other = tmp_path / "cls-pooled"
    shutil.copytree(folder, other, ignore=shutil.ignore_patterns("model.safetensors"))
    (other / "model.safetensors").symlink_to(folder / "model.safetensors")
    pool = other / "1_Pooling" / "config.json"
    cfg = json.loads(pool.read_text())
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pool.write_text(json.dumps(cfg))
    assert not supports(other)
    model = _load(other)
    assert not isinstance(model, BertEncoder)
    vec = Embedder(other)(["hello"])
    assert len(vec[0]) == 384


def _st(folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu")


def test_a_query_leaves_no_blas_thread_spinning(folder):
    """A query runs on one BLAS thread: with numpy's two, OpenBLAS's second thread spun ~100 ms
    after the last product, a core taken from the engine prefilling the prompt the query was for.
    Measured as this process's CPU time while it sleeps right after a query (in a fresh process:
    BLAS threads once started would keep their own settings)."""
    code = ("import resource, time; from memory.bert import BertEncoder; from memory.embeddings import model_path\n"
            "e = BertEncoder(model_path()); burned = []\n"
            "cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])\n"
            "for _ in range(3):\n"
            "    e.encode(['where did we leave the dragon story?'], batch_size=32)\n"
            "    c = cpu(); time.sleep(0.3); burned.append(cpu() - c)\n"
            "print(max(burned) * 1000)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-500:]
    assert float(out.stdout) < 30, f"{float(out.stdout):.0f} ms of CPU burned while idle after a query"
