"""Tree verification on the real model: one pass over a flattened draft tree (tree mask, depth
positions) gives the same logits as feeding each root-to-node path sequentially."""
import numpy as np

from engine.decoding.drafting.accept import greedy_accept
from engine.decoding.drafting.tree import Candidate, TreeBuilder


def arr(values) -> np.ndarray:
    """Token ids or positions as the engine takes them."""
    return np.array(values, dtype=np.int64)


def prefill(model, ids):
    cache = model.new_cache(len(ids) + 64)
    model.forward(arr(ids), arr(range(len(ids))), cache)
    cache.commit(len(ids))
    return cache


def sequential_logits(model, ids, path_tokens):
    """Logits after each token of ``path_tokens`` fed one by one after ``ids``."""
    cache = prefill(model, ids)
    out = []
    for t in path_tokens:
        h = model.forward(arr([t]), arr([cache.length]), cache)
        cache.commit(1)
        out.append(model.logits(h)[0])
    return np.stack(out), cache


def test_tree_logits_equal_sequential_and_kv_keeps_the_accepted_path(engine):
    model = engine.model
    ids = engine.encode("The quick brown fox jumps over the lazy dog. The quick brown fox")
    root = ids[-1]
    past = ids[:-1]
    # the model's own greedy continuation gives one branch that will be accepted
    greedy, _ = sequential_logits(model, past, [root])
    g1 = int(greedy[0].argmax())
    seq, _ = sequential_logits(model, past, [root, g1])
    g2 = int(seq[1].argmax())
    b = TreeBuilder(root)
    b.add(Candidate([g1, g2, 11, 12], [0.9, 0.8, 0.5, 0.5], "context"))
    b.add(Candidate([g1, 13, 14], [0.9, 0.3, 0.3], "history"))
    b.add(Candidate([15, 16, 17], [0.2, 0.2, 0.2], "calibrated"))
    tree = b.build(32)
    assert tree.size == 10

    cache = prefill(model, past)
    L = cache.length
    mask = np.concatenate([np.ones((tree.size, L), dtype=np.bool_), tree.mask], axis=1)
    hidden = model.forward(tree.tokens, tree.depths + L, cache, mask)
    tree_logits = model.logits(hidden)

    # every node: its logits equal those of the sequential pass along its root path
    leaves = [i for i in range(tree.size) if not tree.children[i]]
    seq_cache = prefill(model, past)
    checked = set()
    for leaf in leaves:
        seq_cache.truncate(L)
        for node in tree.path_to(leaf):
            h = model.forward(tree.tokens[node:node + 1], arr([seq_cache.length]), seq_cache)
            seq_cache.commit(1)
            assert np.allclose(tree_logits[node], model.logits(h)[0], atol=1e-4, rtol=0), node
            checked.add(node)
    assert checked == set(range(tree.size))

    path, bonus = greedy_accept(tree, tree_logits.argmax(-1))
    assert [tree.token_list[i] for i in path[1:]][:2] == [g1, g2]
    cache.commit(tree.size, path)
    assert cache.length == L + len(path)
    # the compacted cache continues exactly like a sequentially built one
    ref_logits, ref_cache = sequential_logits(model, past, [tree.token_list[i] for i in path])
    assert np.allclose(cache.k[:, :, :cache.length], ref_cache.k[:, :, :cache.length], atol=1e-4)
    nxt_a = model.logits(model.forward(arr([bonus]), arr([cache.length]), cache))[0]
    nxt_b = model.logits(model.forward(arr([bonus]), arr([ref_cache.length]), ref_cache))[0]
    assert np.allclose(nxt_a, nxt_b, atol=1e-4, rtol=0)
    assert int(ref_logits[-1].argmax()) == bonus


def test_multi_token_pass_matches_single_token_passes(engine):
    """Batch invariance of the fp32 path: argmax over a 24-token causal pass == one-by-one."""
    model = engine.model
    ids = engine.encode("In 1969 the first people walked on the Moon. The mission was called Apollo 11 and "
                        "it was launched from Florida by a Saturn V rocket.")
    past, feed = ids[:8], ids[8:32]
    cache = prefill(model, past)
    batch = model.logits(model.forward(arr(feed), arr(range(8, 8 + len(feed))), cache))
    seq, _ = sequential_logits(model, past, feed)
    assert np.array_equal(batch.argmax(-1), seq.argmax(-1))
    assert np.abs(batch - seq).max() < 1e-3
