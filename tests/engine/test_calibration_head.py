"""Calibration policy: which methods calibrate and how wide, and the reduced vocabulary prefill
ranks (its top tokens must map back to real ids)."""
import torch

from engine.decoding.calibration_policy import DEFAULT, WIDE, calibration_for, calibration_head
from engine.methods import METHOD_SPECS


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
