"""Turning logits into the next token: greedy, or temperature + top-p sampling with a seed."""
from __future__ import annotations

import torch


def processed_probs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """The distribution plain sampling draws from (last dim = vocabulary), after temperature and top-p."""
    probs = torch.softmax(logits.float() / max(temperature, 1e-5), dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        # keep the smallest prefix whose mass reaches top_p (always at least one token)
        drop = sorted_p.cumsum(-1) - sorted_p >= top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


class Sampler:
    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None):
        if temperature < 0 or not 0 < top_p <= 1:
            raise ValueError("temperature must be >= 0 and top_p in (0, 1]")
        self.temperature = temperature
        self.top_p = top_p
        self.generator = torch.Generator()
        self.generator.manual_seed(seed if seed is not None else torch.seed())

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        return processed_probs(logits, self.temperature, self.top_p)

    def pick(self, logits: torch.Tensor) -> int:
        """Next token from the logits of one position."""
        if self.greedy:
            return int(logits.argmax())
        return int(torch.multinomial(self.probs(logits), 1, generator=self.generator))
