"""Incremental detokenization with stop strings.

Text is decoded from all generated ids (so multi-token characters come out whole) and released only
once it can no longer turn out to be part of a stop string or a half-decoded character.
"""
from __future__ import annotations

from typing import Sequence


class TextStream:
    def __init__(self, tokenizer, stop: Sequence[str] = ()):
        self.tokenizer = tokenizer
        self.stop = tuple(s for s in stop if s)
        self.ids: list[int] = []
        self.text = ""          # decoded text so far (cut at a stop string once found)
        self.released = 0       # characters already handed out
        self.stopped = False

    def push(self, token_ids: Sequence[int]) -> str:
        """Add tokens; return the newly releasable text. Sets ``stopped`` when a stop string appears."""
        if self.stopped:
            return ""
        self.ids.extend(token_ids)
        self.text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        hold = 0
        for s in self.stop:
            at = self.text.find(s, max(0, self.released - len(s)))
            if at != -1:
                self.text = self.text[:at]
                self.stopped = True
                return self._release(len(self.text))
            # hold back a tail that could still grow into this stop string
            for k in range(min(len(s) - 1, len(self.text)), 0, -1):
                if self.text.endswith(s[:k]):
                    hold = max(hold, k)
                    break
        end = len(self.text) - hold
        if self.text.endswith("\ufffd"):  # an incomplete multi-byte character
            end = min(end, len(self.text) - 1)
        return self._release(end)

    def flush(self) -> str:
        return self._release(len(self.text.rstrip("\ufffd")) if not self.stopped else len(self.text))

    def _release(self, end: int) -> str:
        if end <= self.released:
            return ""
        delta = self.text[self.released:end]
        self.released = end
        return delta
