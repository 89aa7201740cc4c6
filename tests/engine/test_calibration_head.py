"""Calibration policy: which methods calibrate and how wide, and the reduced vocabulary prefill
ranks (its top tokens must map back to real ids)."""
from types import SimpleNamespace

import numpy as np

from engine.decoding.calibration_policy import (DEFAULT, WIDE, CalibrationPolicy, TopKView, calibration_for,
                                               calibration_head)
from engine.decoding.drafting.calibration import CalibrationConfig
from engine.runtime.reference import softmax
from engine.methods import METHOD_SPECS


class FakeModel:
    softmax_topk = None   # numpy ranks

    def __init__(self, V=50, H=4):
        self.lm_head = np.random.default_rng(0).standard_normal((V, H), dtype=np.float32)

    def head_logits(self, hidden, rows):
        return hidden @ self.lm_head[:rows].T

    def linear(self, x, w):
        return x @ w.T


def test_calibration_head_subset_holds_prompt_and_frequent_ids():
    m = FakeModel()
    extra_ids, extra = calibration_head(m, [40, 7, 40, 45], 5)
    assert extra_ids.tolist() == [7, 40, 45]          # the prompt's ids past the first 5
    assert np.array_equal(extra, m.lm_head[extra_ids])
    assert calibration_head(m, [1, 2], 5) == (None, None)   # all among the first ids
    assert calibration_head(m, [1, 2], 0) == (None, None)   # every id: the model's own head


def test_topk_view_maps_the_subset_back_to_vocabulary_ids():
    """The view ranks the first ids and the prompt's own; its top ids are real vocabulary ids,
    and the best one is the best of that subset under the full head."""
    m = FakeModel(V=60, H=8)
    prompt = [3, 41, 57, 41]
    view = TopKView(m, prompt, CalibrationPolicy(CalibrationConfig(k=3), vocab=10))
    hidden = np.random.default_rng(1).standard_normal((5, 8), dtype=np.float32)
    view.add(hidden[:2])
    view.add(hidden[2:])
    ids, probs = view.result()
    subset = list(range(10)) + [41, 57]
    full = hidden @ m.lm_head.T
    best = np.array(subset)[full[:, subset].argmax(-1)]
    assert np.array_equal(ids[:, 0], best) and ids.shape == probs.shape == (5, 3)
    assert np.allclose(probs[:, 0], softmax(full[:, subset]).max(-1))


def test_each_method_gets_its_calibration_from_one_policy():
    policy = {name: calibration_for(spec) for name, spec in METHOD_SPECS.items()}
    assert policy == {"vanilla": None, "sam": None, "hexa": DEFAULT, "hexa-fill": WIDE, "hexa-nocal": None,
                      "hexa-noreuse": DEFAULT, "hexa-nohist": DEFAULT}
    # the wide tree keeps less likely paths, for a static graph's 32-token budget
    assert WIDE.tree.p_threshold < DEFAULT.tree.p_threshold and WIDE.tree.max_nodes > DEFAULT.tree.max_nodes
    assert WIDE.topk == DEFAULT.topk == DEFAULT.tree.k


def test_calibration_topk_ids_are_real_token_ids(engine):
    """The top-k view given to the speculator holds vocabulary ids, and its best guess at the
    last prompt position is the model's own greedy next token (the prompt's tokens are ranked)."""
    from engine.decoding.drafting.tree import root_only
    from engine.decoding.generation import GenerationConfig, generate

    captured = {}

    class Spy:
        max_tree = 0
        calibration = DEFAULT

        def start(self, ids, first, topk):
            captured["ids"], captured["first"], captured["topk"] = ids, first, topk
            return 0.0

        def propose(self):
            return root_only(captured["first"])

        def observe(self, *a, **k):
            pass

    ids = engine.encode("The cat sat on the mat. The cat sat on the")
    list(generate(engine.model, engine.tokenizer, ids, GenerationConfig(max_new_tokens=1, chunk_size=5),
                  engine.eos_ids, 4096, Spy()))
    top_ids, top_p = captured["topk"]
    assert top_ids.shape == (len(ids), 4) and top_p.shape == (len(ids), 4)
    assert int(top_ids.max()) < engine.model.lm_head.shape[0]
    assert captured["first"] in set(ids)                # " mat": copied from the prompt
    assert int(top_ids[-1, 0]) == captured["first"]


def test_head_logits_are_the_models_own_first_logits(engine):
    """The first ids' logits calibration ranks read the head's own rows in place, with decoding's
    arithmetic: the very numbers of the model's logits for those ids."""
    m = engine.model
    ids = engine.encode("The committee met on Tuesday to discuss the budget. The budget was approved after a long debate.")
    hidden = m.forward(np.array(ids, dtype=np.int64), np.arange(len(ids), dtype=np.int64), m.new_cache(len(ids) + 1))
    for rows in (4096, 1000):                      # whole panels of 16 rows, and not
        assert np.array_equal(m.head_logits(hidden, rows), m.logits(hidden)[:, :rows])


def test_the_top_by_blocks_equals_topk_where_no_values_tie():
    """Calibration's top-k through block maxima: the same values and columns as ``topk`` on rows
    without ties, the largest in the short last block included, and small rows through topk."""
    import numpy as np

    from engine.decoding.calibration_policy import top_by_blocks
    from engine.decoding.sampling import topk

    g = np.random.default_rng(3)
    for n, k in ((8900, 8), (4097, 4), (49152, 16), (100, 8)):
        x = g.permutation(256 * n).reshape(256, n).astype(np.float64)   # distinct values
        x[:5, -1] = 1e9 + np.arange(5)                                  # in the last, short block
        got, want = top_by_blocks(x, k), topk(x, k)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (n, k)


def test_the_native_ranking_gives_numpys_view(engine):
    """The native softmax + top-k (``topk.c``) and numpy's give a real prompt's view the same ids
    and the same probabilities to float rounding."""
    m = engine.model
    assert m.softmax_topk is not None
    ids = engine.encode("Maren packed the tent, the stove and two maps; the trail to Skarvet hut "
                        "climbs 900 metres and the stove is the heaviest thing she carries.")
    hidden = m.forward(np.array(ids, dtype=np.int64), np.arange(len(ids), dtype=np.int64), m.new_cache(len(ids) + 1))
    views = []
    for native in (m.softmax_topk, None):
        view = TopKView(m, ids, DEFAULT)
        view.model = SimpleNamespace(softmax_topk=native, head_logits=m.head_logits, linear=m.linear,
                                     logits=m.logits)
        view.add(hidden[:7])
        view.add(hidden[7:])
        views.append(view.result())
    (ids_c, p_c), (ids_n, p_n) = views
    assert np.array_equal(ids_c, ids_n)
    assert np.allclose(p_c, p_n, rtol=1e-5, atol=1e-7)


def test_engine_on_native_kernels_leaves_numpy_one_blas_thread(engine):
    """OpenBLAS's threads spin after a product and took a core from the native pool: the prefill
    chunk after calibration's small numpy product ran ~25% slower. With the native kernels loaded,
    numpy's BLAS keeps one thread."""
    from threadpoolctl import threadpool_info

    assert engine.model.native is not None
    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    assert blas and all(p["num_threads"] == 1 for p in blas)
