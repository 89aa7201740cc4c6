"""A request's decoding: the generation loop (``generation``), plain and speculative steps
(``speculative``, with the drafting sources in ``drafting/``), sampling and penalties, constrained
decoding (``grammar`` compiles a grammar, ``constrained`` applies it in the loop), in-context
calibration's per-method policy, prefix KV reuse across requests and the text stream."""
