import numpy as np

from engine.runtime.kv_cache import KVCache


def filled(capacity=16, layers=2, heads=2, dim=3):
    c = KVCache(layers, heads, dim, capacity)
    # entry value = slot index, so moves are visible
    for s in range(capacity):
        c.k[:, :, s] = s
        c.v[:, :, s] = 100 + s
    return c


def test_commit_all_advances_length():
    c = filled()
    c.commit(5)
    assert c.length == 5 and c.room() == 11


def test_commit_subset_compacts_accepted_path_to_the_front():
    c = filled()
    c.commit(4)                      # 4 tokens of past
    c.commit(6, [0, 2, 5])           # a tree of 6 pending entries; the accepted path is 0, 2, 5
    assert c.length == 7
    assert c.k[0, 0, :7, 0].tolist() == [0, 1, 2, 3, 4, 6, 9]
    assert c.v[1, 1, :7, 2].tolist() == [100, 101, 102, 103, 104, 106, 109]


def test_commit_prefix_path_moves_nothing():
    c = filled()
    c.commit(3)
    before = c.k.copy()
    c.commit(5, np.array([0, 1, 2]))
    assert c.length == 6 and np.array_equal(c.k, before)


def test_commit_root_only_and_truncate():
    c = filled()
    c.commit(2)
    c.commit(4, [0])
    assert c.length == 3 and c.k[0, 0, 2, 0] == 2
    c.truncate(1)
    assert c.length == 1
    c.truncate(10)
    assert c.length == 1
