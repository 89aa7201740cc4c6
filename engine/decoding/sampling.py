"""Turning logits into the next token: greedy, or sampling with a seed after top-k, min-p,
temperature and top-p (in that order; penalties come before, ``engine/decoding/penalties.py``).

top-k and min-p are llama.cpp's: keep the k highest logits; keep the logits within log(min_p) of
the highest (p >= min_p * p_max before temperature, as llama.cpp applies temperature last). top-p
is kept as hexa has always applied it: on the distribution after temperature. Greedy decoding
ignores all four (none of them changes the argmax).
"""
from __future__ import annotations

import math

import torch


def processed_probs(logits: torch.Tensor, temperature: float, top_p: float, top_k: int = 0,
                    min_p: float = 0.0) -> torch.Tensor:
    """The distribution plain sampling draws from (last dim = vocabulary)."""
    logits = logits.float()
    if 0 < top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if min_p > 0.0:
        floor = logits.max(-1, keepdim=True).values + math.log(min_p)
        logits = logits.masked_fill(logits < floor, float("-inf"))
    probs = torch.softmax(logits / max(temperature, 1e-5), dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # keep the smallest prefix whose mass reaches top_p (always at least one token)
        drop = sorted_p.cumsum(-1) - sorted_p >= top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def check_sampling(temperature: float, top_p: float, top_k: int = 0, min_p: float = 0.0) -> None:
    if temperature < 0 or not 0 < top_p <= 1 or top_k < 0 or not 0 <= min_p < 1:
        raise ValueError("temperature must be >= 0, top_p in (0, 1], top_k >= 0 and min_p in [0, 1)")


class Sampler:
    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
                 top_k: int = 0, min_p: float = 0.0):
        check_sampling(temperature, top_p, top_k, min_p)
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.min_p = min_p
        self.generator = torch.Generator()
        self.generator.manual_seed(seed if seed is not None else torch.seed())

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        return processed_probs(logits, self.temperature, self.top_p, self.top_k, self.min_p)

    def pick(self, logits: torch.Tensor) -> int:
        """Next token from the logits of one position."""
        if self.greedy:
            return int(logits.argmax())
        return int(torch.multinomial(self.probs(logits), 1, generator=self.generator))
