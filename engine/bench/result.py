"""What one run of a benchmark method reports."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunResult:
    tokens: list[int]
    seconds: float
    steps: int                   # decoding forward passes after the one that produced token 1
    accepted_per_step: float
    ttft_s: float = 0.0          # request start -> first new token (prefill included)
    extra: dict = field(default_factory=dict)   # prefill_ms, reused_tokens, method-specific figures
