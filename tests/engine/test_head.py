"""The one-row output projection (MKL gemv over a transposed copy of the head) agrees with the
multi-row path (oneDNN over the head as stored): same greedy token at every position of a real
prompt, logits within fp32 rounding."""
from __future__ import annotations

import torch


def test_one_row_head_matches_batched_head(engine):
    model = engine.model
    ids = engine.chat_ids([{"role": "user", "content": "Summarize: the cat sat on the mat, then the dog "
                                                       "chased the cat around the garden twice."}])
    cache = model.new_cache(len(ids) + 1)
    hidden = model.forward(torch.tensor(ids), torch.arange(len(ids)), cache)
    batched = model.logits(hidden)                       # many rows: oneDNN over lm_head
    assert batched.shape == (len(ids), model.lm_head.shape[0])
    rows = torch.cat([model.logits(hidden[i:i + 1]) for i in range(len(ids))])   # one row each
    assert torch.equal(rows.argmax(-1), batched.argmax(-1))
    assert torch.allclose(rows, batched, atol=1e-4, rtol=0)
    if model.head_t is not None:
        assert torch.equal(model.head_t, model.lm_head.t())
