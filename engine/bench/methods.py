"""The decoding methods a benchmark can compare, each run on the same prompt ids.

Engine methods go through ``Engine.generate``; ``hf`` (plain greedy) and ``pld``/``pld3``/``pld10``
(prompt lookup decoding) are transformers' own ``generate`` on the same cached weights, as peers;
``llamacpp`` is llama.cpp's greedy decoding on the same GGUF (optional: ``pip install -e .[peers]``).

Every run starts cold unless told otherwise (``cold=False``, the multi-turn benchmark): nothing from
an earlier request (a kept KV prefix) may shorten its prefill. A run in a session (``session=True``,
every turn of the multi-turn benchmark, its first included) keeps its prompt and answer for the
next. Each result's ``extra["prefill_ms"]`` is the time from the request's start until the
prompt's logits are ready (the first token is then one sampling away: ``ttft_s``).

With a device cost profile (qnn ``--cost-profile``) an engine method's result also holds
``estimated_device_seconds``: the run replayed on the profile (``qnn.blocks.GraphLedger``), its
graph runs and graph-load waits priced at the device's times, the rest kept as measured.
"""
from __future__ import annotations

import time

from ..errors import EngineError
from ..events import Done
from ..methods import METHODS
from .result import RunResult


class EngineMethod:
    """``options``: more ``Engine.generate`` arguments (a mode's penalties: ``hexa@summarizer``)."""

    def __init__(self, engine, method: str, options: dict | None = None):
        self.engine, self.method, self.options = engine, method, dict(options or {})

    def run(self, ids: list[int], max_new: int, history: list[list[int]], cold: bool = True,
            session: bool = False) -> RunResult:
        if cold:
            self.engine.forget_prefixes()
        ledger = self.engine.model.graphs.ledger if self.engine.cost_profile is not None else None
        before = ledger.snapshot() if ledger is not None else None
        t0 = time.perf_counter()
        done = None
        # in a session (a chat), the next turn continues this prompt and answer: keep both
        for ev in self.engine.generate(ids, max_new_tokens=max_new, method=self.method, sources=history,
                                       keep_answer=session, **self.options):
            if isinstance(ev, Done):
                done, seconds = ev, ev.t - t0   # stamped when the answer was complete (then the answer's KV is kept)
        extra = {"ttft_ms": done.ttft_ms, "prefill_ms": done.prefill_ms, "reused_tokens": done.reused_tokens,
                 "draft_ms": done.draft_ms, "verify_ms": done.verify_ms,
                 "calibration_ms": done.calibration_ms, "by_source": done.accepted_by_source}
        if ledger is not None:
            extra.update(device_estimate(ledger.since(before), seconds))
        return RunResult(list(done.token_ids), seconds, done.steps, done.mean_accepted, done.ttft_ms / 1000, extra)


def device_estimate(spent, seconds: float) -> dict:
    """A run's figures replayed on the device cost profile (``spent``: its ``GraphLedger`` part)."""
    return {"estimated_device_seconds": spent.estimate_ms(seconds * 1000) / 1000,
            "graph_runs": spent.runs, "measured_graph_ms": spent.graph_ms, "measured_load_wait_ms": spent.stall_ms,
            "estimated_device_graph_ms": spent.device_graph_ms,
            "estimated_device_load_wait_ms": spent.device_stall_ms}


class TransformersMethod:
    """transformers ``generate`` on the engine's cached weights (greedy; optional prompt lookup).

    The only bench code that needs torch (transformers runs on it): imported here, in the peer's
    own calls, so that the engine's methods are benchmarked in a process without torch."""
    _models: dict[str, tuple] = {}   # one model per weights folder, shared by hf/pld methods

    def __init__(self, engine, lookup_tokens: int = 0):
        key = str(engine.folder)
        if key not in self._models:
            import torch
            from transformers import AutoModelForCausalLM

            source = getattr(engine, "source", None)
            if source is not None and source.kind == "gguf":
                # the engine keeps a GGUF's codes, not fp32 weights: transformers reads the file itself
                model = AutoModelForCausalLM.from_pretrained(source.path.parent, gguf_file=source.path.name,
                                                             dtype=torch.float32).eval()
            else:
                model = AutoModelForCausalLM.from_pretrained(engine.folder, dtype=torch.float32).eval()
            calls = [0]   # forward passes, counted to report tokens per pass
            model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
            self._models[key] = (model, calls)
        self.model, self._calls = self._models[key]
        self.lookup = lookup_tokens
        self.eos = sorted(engine.eos_ids)

    def run(self, ids: list[int], max_new: int, history: list[list[int]], cold: bool = True) -> RunResult:
        import torch

        # always cold: ``generate`` keeps no KV cache across calls
        kwargs = {"prompt_lookup_num_tokens": self.lookup} if self.lookup else {}
        before = self._calls[0]
        first = _FirstTokenClock()
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                      max_new_tokens=max_new, do_sample=False, eos_token_id=self.eos,
                                      pad_token_id=self.eos[0], streamer=first, **kwargs)
        seconds = time.perf_counter() - t0
        tokens = out[0, len(ids):].tolist()
        while tokens and tokens[-1] in self.eos:   # the engine reports tokens without the final EOS
            tokens.pop()
        steps = max(self._calls[0] - before - 1, 0)
        ttft = (first.at - t0) if first.at else seconds
        # the streamer sees the first token after prefill and its sampling: no finer split exists
        return RunResult(tokens, seconds, steps, (len(tokens) - 1) / steps if steps else 0.0, ttft,
                         {"ttft_ms": ttft * 1000, "prefill_ms": ttft * 1000, "reused_tokens": 0})


class _FirstTokenClock:
    """A transformers streamer that only notes when the first new token arrives (its TTFT)."""

    def __init__(self):
        self.calls = 0
        self.at = 0.0

    def put(self, _value) -> None:
        self.calls += 1
        if self.calls == 2:     # the first call carries the prompt, the second the first new token
            self.at = time.perf_counter()

    def end(self) -> None:
        pass


# transformers' own generate on the same weights, as peers: lookup tokens (0: plain greedy)
PEERS = {"hf": 0, "pld": 10, "pld10": 10, "pld3": 3}
LLAMACPP = "llamacpp"   # llama.cpp (llama-cpp-python) on the engine's GGUF


def make_method(name: str, engine, options: dict | None = None):
    """``name``: a method, or an engine method with a suffix (``hexa@summarizer``) that
    ``options`` (its extra ``Engine.generate`` arguments) defines."""
    base, _, suffix = name.partition("@")
    if suffix:
        if base not in METHODS or options is None:
            raise EngineError(f"unknown bench method {name!r} (a suffix needs an engine method and its options)")
        return EngineMethod(engine, base, options)
    if name in PEERS:
        return TransformersMethod(engine, lookup_tokens=PEERS[name])
    if name == LLAMACPP:
        from .llamacpp import LlamaCppMethod

        return LlamaCppMethod(engine)
    if name in METHODS:
        return EngineMethod(engine, name)
    raise EngineError(f"unknown bench method {name!r} "
                      f"(available: {', '.join(METHODS + tuple(PEERS) + (LLAMACPP,))})")
