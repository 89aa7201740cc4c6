from engine.decoding.drafting.reuse import ReuseBuffer, best_run

# "Clinton arrived at the house" drafted; the model writes "Clinton has arrived at the house".
ARRIVED, AT, THE, HOUSE, HAS, CAME, CLINTON = 1, 2, 3, 4, 50, 60, 9


def test_best_run():
    assert best_run([1, 2, 3, 4, 5], [0, 2, 3, 9, 5]) == (1, 3)
    assert best_run([1, 2, 3, 4], [0, 0, 3, 4]) == (2, 4)
    assert best_run([1, 2], [0, 0]) == (0, 0)


def test_missing_token_case_is_reused_after_the_model_token():
    buf = ReuseBuffer()
    draft = [ARRIVED, AT, THE, HOUSE]
    preds = [HAS, AT, THE, HOUSE]        # conditioned on "Clinton arrived", the rest still fits
    e = buf.record(draft, preds, committed_len=10)
    assert e is not None and e.tokens == draft and e.run_start == 1
    # next step: root is the bonus HAS; blind offers: the run, and the run with x_e before it
    offers = {tuple(c.tokens): c for c in buf.offers([CLINTON, HAS])}
    assert (ARRIVED, AT, THE, HOUSE) in offers and (AT, THE, HOUSE) in offers
    assert all(c.source == "reuse" for c in offers.values())
    # once re-anchored, the verified run is trusted far more than the blind first token
    c = offers[(ARRIVED, AT, THE, HOUSE)]
    assert c.probs[0] < c.probs[1] and c.probs[1] >= 0.8
    # later the model commits "arrived": the generation re-joined the old draft
    buf.step(committed_len=11)
    anchored = buf.offers([HAS, ARRIVED])
    assert [c.tokens for c in anchored] == [[AT, THE, HOUSE]]
    assert anchored[0].probs[0] > offers[(AT, THE, HOUSE)].probs[0]   # anchored beats blind


def test_synonym_case_offers_the_run_directly():
    buf = ReuseBuffer()
    buf.record([ARRIVED, AT, THE, HOUSE], [CAME, AT, THE, HOUSE], committed_len=5)
    assert [AT, THE, HOUSE] in [c.tokens for c in buf.offers([CLINTON, CAME])]


def test_short_runs_are_not_kept_and_entries_expire():
    buf = ReuseBuffer(min_run=2, ttl=2, max_lag=2)
    assert buf.record([1, 2, 3], [0, 2, 7], committed_len=0) is None   # run of 1
    buf.record([1, 2, 3, 4], [0, 2, 3, 4], committed_len=0)
    buf.step(1)
    assert len(buf) == 1
    buf.step(2)
    assert len(buf) == 1
    buf.step(3)                       # age 3 > ttl 2
    assert len(buf) == 0
    buf.record([1, 2, 3, 4], [0, 2, 3, 4], committed_len=0)
    buf.step(20)                      # generation moved far past the entry
    assert len(buf) == 0


def test_blind_offers_only_right_after_rejection_and_offer_cap():
    buf = ReuseBuffer(max_offer_tokens=3)
    buf.record([1, 2, 3, 4], [0, 2, 3, 4], committed_len=0)
    assert sum(len(c.tokens) for c in buf.offers([77])) <= 3
    buf.step(1)
    assert buf.offers([77]) == []     # unanchored and no longer fresh
    assert buf.offers([2])[0].tokens == [3, 4]


def test_consumed_entries_are_dropped():
    buf = ReuseBuffer()
    buf.record([1, 2, 3, 4], [0, 2, 3, 4], committed_len=0)
    buf.consume([3, 4])
    assert len(buf) == 0
