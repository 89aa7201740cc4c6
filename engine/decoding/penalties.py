"""Repetition penalties, defined as llama.cpp's samplers of the same names, applied per draft node.

``repeat_penalty`` / ``frequency_penalty`` / ``presence_penalty`` over the last ``repeat_last_n``
tokens (llama.cpp ``penalties``): a token seen ``c > 0`` times there has its logit divided by
``repeat_penalty`` if positive, multiplied by it if not, then lowered by ``c * frequency_penalty
+ presence_penalty``.

DRY (llama.cpp ``dry``, from koboldcpp): if the context's last ``m`` tokens also occur earlier,
followed by token ``t``, emitting ``t`` would extend a repeat; with ``m >= dry_allowed_length``,
``t``'s logit is lowered by ``dry_multiplier * dry_base ** (m - dry_allowed_length)`` (``m`` the
longest such match, capped at the tokens since the last sequence breaker, over the last
``dry_last_n`` tokens). A breaker token (one whose text holds a breaker string) is never penalised.

The "context" is the prompt and the answer so far, as llama.cpp's server replays the prompt into
its samplers; with ``penalize_prompt=False`` (hexa's own knob) it is the answer alone, so that
quoting the document being summarised is not a repeat (measured: DRY over the prompt turned
"American Medical Association", copied from the article, into "American MedicalAssociation").
``-1`` for a ``last_n``: the whole context; ``0``: off.

Lossless speculation: every verified node's logits are penalised with *that node's* context —
the emitted tokens plus the drafts on its path from the root — so each node's argmax (greedy)
or distribution (sampling) is the one plain decoding would use after that same prefix
(``penalty_run.PenaltyRun``; this module imports no array library, for the settings and the agents).
"""
from __future__ import annotations

from dataclasses import dataclass

DRY_BREAKERS = ("\n", ":", "\"", "*")      # llama.cpp's defaults


@dataclass(frozen=True)
class Penalties:
    repeat_penalty: float = 1.0
    repeat_last_n: int = 64
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_last_n: int = -1
    dry_breakers: tuple[str, ...] = DRY_BREAKERS
    penalize_prompt: bool = True           # False: the answer alone is the context

    def check(self) -> None:
        """A ``ValueError`` naming the first bad knob."""
        if self.repeat_penalty <= 0:
            raise ValueError("repeat_penalty must be > 0 (1 is off)")
        if self.repeat_last_n < -1 or self.dry_last_n < -1:
            raise ValueError("repeat_last_n and dry_last_n must be >= -1 (-1: the whole context)")
        if self.dry_multiplier < 0 or self.dry_base < 1 or self.dry_allowed_length < 1:
            raise ValueError("dry_multiplier must be >= 0, dry_base >= 1 and dry_allowed_length >= 1")

    @property
    def counts_active(self) -> bool:
        return self.repeat_last_n != 0 and (self.repeat_penalty != 1.0 or self.frequency_penalty != 0.0
                                            or self.presence_penalty != 0.0)

    @property
    def dry_active(self) -> bool:
        return self.dry_multiplier > 0 and self.dry_last_n != 0

    @property
    def active(self) -> bool:
        return self.counts_active or self.dry_active


def breaker_ids(texts: list[str | None], breakers: tuple[str, ...]) -> frozenset[int]:
    """Tokens whose text holds a breaker string. (llama.cpp also matches a multi-character breaker
    split across tokens; hexa's defaults are single characters, where that cannot happen.)"""
    return frozenset(i for i, t in enumerate(texts) if t and any(b in t for b in breakers))
