"""Token-level migration: moving a long answer's decoding to the cheaper endpoint mid-stream.

No KV is transferred: the target prefills prompt + the tokens generated so far (as token ids when
both endpoints share the vocabulary, else as text cut at a whitespace boundary) and continues.
The source keeps streaming until it is B = r_c·t_m tokens ahead of the reader (r_c the reading
rate, t_m the migration time), so the reader finishes that buffer while the target prefills."""
from __future__ import annotations

import math


def worth_migrating(price_gap_out: float, remaining: float, overhead: float) -> bool:
    """Δc·l_remaining > overhead: the output tokens still to come cost ``price_gap_out`` less each
    on the target than on the source, and moving costs ``overhead`` (the target's prefill)."""
    return price_gap_out > 0 and price_gap_out * remaining > overhead


def buffer_tokens(read_rate: float, migration_s: float) -> int:
    """B = r_c·t_m, rounded up: the tokens that must be ahead of the reader at the handover."""
    return max(1, math.ceil(read_rate * migration_s))


def text_handover(text: str) -> tuple[str, str]:
    """(what the target is given, what it must regenerate): ``text`` cut before its last
    whitespace, so the target never continues from half a word, nor from a trailing space (BPE
    vocabularies carry a word's space at its start: "sat" + " on", never "sat " + "on"; the
    target would be continuing from a tokenization it never produces itself)."""
    cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
    return (text[:cut], text[cut:]) if cut >= 0 else ("", text)


def same_vocabulary(local: list[list[int]], remote: list[list[int]]) -> bool:
    """True when the server tokenized every probe text to the ids the device did (then token ids
    can be sent as they are)."""
    return len(local) == len(remote) and all(list(a) == list(b) for a, b in zip(local, remote))


PROBES = ("Hello, world! The quick brown fox", " 1234 naïve café — \n\tdone.",
          "def f(x):\n    return x ** 2  # ok")
