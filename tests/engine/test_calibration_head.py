"""Calibration during prefill ranks a reduced vocabulary; its top tokens must map back to ids."""
import torch

from engine.generation import calibration_head


class FakeModel:
    def __init__(self, V=50, H=4):
        self.lm_head = torch.randn(V, H)


def test_calibration_head_subset_holds_prompt_and_frequent_ids():
    m = FakeModel()
    vocab, head = calibration_head(m, [40, 7, 40, 45], 5)
    assert vocab.tolist() == [0, 1, 2, 3, 4, 7, 40, 45]
    assert torch.equal(head, m.lm_head[vocab])
    full_vocab, full = calibration_head(m, [1, 2], 0)
    assert full_vocab is None and full is m.lm_head


def test_calibration_topk_ids_are_real_token_ids(engine):
    """The top-k view given to the drafter holds vocabulary ids, and its best guess at the
    last prompt position equals the model's own greedy next token when that token is in the subset."""
    from engine.generation import GenerationConfig, generate

    captured = {}

    class Spy:
        max_tree = 0

        def start(self, ids, first, topk):
            captured["ids"], captured["first"], captured["topk"] = ids, first, topk
            return 0.0

        def propose(self):
            from engine.drafting.tree import root_only
            return root_only(captured["first"])

        def observe(self, *a):
            pass

    ids = engine.encode("The cat sat on the mat. The cat sat on the")
    cfg = GenerationConfig(max_new_tokens=1, calibration_topk=4)
    list(generate(engine.model, engine.tokenizer, ids, cfg, engine.eos_ids, 4096, Spy()))
    top_ids, top_p = captured["topk"]
    assert top_ids.shape == (len(ids), 4) and top_p.shape == (len(ids), 4)
    assert int(top_ids.max()) < engine.model.lm_head.shape[0]
    if captured["first"] in set(ids) or captured["first"] < 4096:
        assert int(top_ids[-1, 0]) == captured["first"]
