"""One request, end to end: chunked prefill, then decoding steps, streamed as events.

Decoding is written once for both plain and speculative decoding: each step feeds the pending token
(the last generated token, not yet in the KV cache) plus the draft tree the method's ``Speculator``
proposes (none for plain decoding), keeps the KV entries of the accepted path, and emits the
accepted tokens plus the model's own next token.

Stops: EOS, a stop string, ``max_new_tokens`` (never more, whatever a step accepts), a full
context, or ``cancel`` — at any point, prefill included: a request cancelled before its first token
emits none and ends with ``Done(stop_reason="cancelled")``.

With a ``Constraint`` (``GenerationConfig.constraint``) every pick is made from logits masked by
the constraint (``constrained.ConstrainedRun``): the first token, every verified node, the bonus.
Without one, the loop does no extra work.

With ``GenerationConfig.penalties`` active, every pick is made from logits penalised after its own
prefix (``penalties.PenaltyRun``): the first token after the prompt, each verified node after the
emitted tokens plus the drafts on its path.
"""
from __future__ import annotations

import resource
import threading
from dataclasses import dataclass, field
from typing import Callable, Generator, Iterator, Sequence

import numpy as np

from ..runtime.backend import Backend
from .calibration_policy import CalibrationPolicy, TopKView
from .constrained import ConstrainedRun
from .grammar import Constraint
from .drafting.accept import accepted_sources, greedy_accept, sample_accept
from .drafting.tree import DraftTree
from ..events import Done, Event, Notice, Prefill, Step, Text, now
from ..runtime.kv_cache import KVCache
from .penalties import Penalties
from .penalty_run import PenaltyRun
from .prefix_cache import PrefixStore, ViewRows
from .sampling import Sampler
from .speculative import Speculator
from .text_stream import TextStream

PROMPT_HEAD_KEEP = 64  # tokens kept from the start of an over-long prompt (system prompt, task)


@dataclass
class GenerationConfig:
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0                         # 0: off
    min_p: float = 0.0                     # 0: off
    penalties: Penalties | None = None     # repetition penalties (None or inactive: off)
    breakers: frozenset[int] = frozenset()  # DRY's sequence-breaker tokens
    seed: int | None = None
    stop: Sequence[str] = ()
    method: str = "vanilla"
    chunk_size: int = 256
    constraint: Constraint | None = None   # only tokens it allows are emitted
    keep_answer: bool = False              # keep prompt + answer as a reusable prefix (a chat's next turn)
    continues: int = 0                     # the prompt's last tokens are an answer's start, which this one goes on


def fit_prompt(ids: list[int], window: int, max_new: int) -> tuple[list[int], int, str | None]:
    """Cut a prompt that leaves too little room: keep its head and its most recent tokens (hexa's
    one fitting policy; chats are fitted by whole messages before they get here, see
    ``agents.common.fit_chat``)."""
    max_new = max(1, min(max_new, window // 2)) if len(ids) + max_new > window else max_new
    room = window - max_new
    if len(ids) <= room:
        return ids, max_new, None
    head = min(PROMPT_HEAD_KEEP, room // 4)
    cut = ids[:head] + ids[len(ids) - (room - head):]
    return cut, max_new, (f"prompt of {len(ids)} tokens exceeds the context window ({window} tokens, "
                          f"{max_new} reserved for the answer): kept the first {head} and the last "
                          f"{room - head} tokens, dropped {len(ids) - len(cut)} in the middle")


def peak_memory_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Output:
    """The tokens a request emits and their text, up to EOS, a stop string or ``max_new`` tokens."""

    def __init__(self, tokenizer, stop: Sequence[str], eos_ids: set[int], max_new: int):
        self.ids: list[int] = []
        self.stream = TextStream(tokenizer, stop)
        self.eos_ids, self.max_new = eos_ids, max_new

    def add(self, tokens: list[int]) -> tuple[str, str]:
        """Append a step's tokens; return (text delta, stop reason or "")."""
        reason = ""
        for k, tok in enumerate(tokens):
            if tok in self.eos_ids:
                tokens, reason = tokens[:k], "eos"
                break
        room = self.max_new - len(self.ids)
        if len(tokens) >= room:      # plain decoding stops here, before an EOS further on
            tokens, reason = tokens[:room], "max_tokens"
        self.ids.extend(tokens)
        delta = self.stream.push(tokens)
        if self.stream.stopped:
            reason = "stop_string"
        return delta, reason

    def emit(self, tokens: list[int]) -> Generator[Text, None, str]:
        """``add`` as events; returns the stop reason."""
        delta, reason = self.add(tokens)
        if delta:
            yield Text(delta)
        return reason


@dataclass
class Totals:
    """What ``Done`` reports about a request, gathered as it runs."""
    prompt_tokens: int
    method: str
    t_start: float
    reused: int = 0           # prompt tokens served from a kept prefix
    prefill_ms: float = 0.0
    ttft_ms: float = 0.0
    calibration_ms: float = 0.0
    steps: int = 0
    draft_ms: float = 0.0
    verify_ms: float = 0.0
    by_source: dict[str, int] = field(default_factory=dict)

    def add(self, step: Step) -> None:
        self.steps += 1
        self.draft_ms += step.draft_ms
        self.verify_ms += step.verify_ms
        for s in step.sources:
            self.by_source[s] = self.by_source.get(s, 0) + 1

    def done(self, stop_reason: str, out: Output) -> Done:
        decode_ms = (now() - self.t_start) * 1000 - self.prefill_ms
        n_new = len(out.ids)
        return Done(
            stop_reason=stop_reason, text=out.stream.text, token_ids=tuple(out.ids),
            prompt_tokens=self.prompt_tokens, new_tokens=n_new, ttft_ms=self.ttft_ms, prefill_ms=self.prefill_ms,
            prefill_tok_s=(self.prompt_tokens - self.reused) / max(self.prefill_ms / 1000, 1e-9),
            decode_ms=decode_ms, decode_tok_s=n_new / max(decode_ms / 1000, 1e-9),
            ms_per_token=decode_ms / max(n_new, 1), steps=self.steps,
            mean_accepted=(sum(self.by_source.values()) / self.steps) if self.steps else 0.0,
            draft_ms=self.draft_ms, verify_ms=self.verify_ms, calibration_ms=self.calibration_ms,
            accepted_by_source=self.by_source, peak_memory_mb=peak_memory_mb(), method=self.method,
            reused_tokens=self.reused)


def prefill(model: Backend, ids: list[int], cache: KVCache, chunk_size: int,
            calibration: CalibrationPolicy | None, cancelled: Callable[[], bool],
            reused: int = 0, view_head: ViewRows | None = None, answer: int = 0
            ) -> Generator[Prefill, None, tuple[np.ndarray, tuple | None] | None]:
    """Feed the prompt in chunks, one ``Prefill`` event each. Returns (logits after the last prompt
    token, the top-k view calibration asked for or None), or None when cancelled before the end
    (checked before every chunk and after the last one's event: no token is sampled from, and no
    speculator started on, part of a prompt).

    ``reused``: ``cache`` already holds the first ``reused`` positions (a kept prefix); only the
    rest is fed, and ``view_head`` holds their top-k view rows when calibrating. ``answer``: the
    last ``answer`` ids are an answer's start (``continues``), fed as decoding fed them
    (``Backend.answer_rows``) in chunks of their own."""
    view = TopKView(model, ids, calibration) if calibration is not None else None
    assert not (reused and view is not None and view_head is None), "a warm prefix without its view"
    chunk = max(1, chunk_size)
    last_hidden = None
    model.begin_prefill(len(ids) - reused)
    split = max(reused, len(ids) - answer)   # where the answer's rows start
    starts = [*range(reused, split, chunk), *range(split, len(ids), chunk)]
    try:
        for s in starts:
            if cancelled():
                return None
            if s == split and answer:
                model.answer_rows()
            t0 = now()
            part = np.array(ids[s:min(s + chunk, split if s < split else len(ids))], dtype=np.int64)
            hidden = model.forward(part, np.arange(s, s + len(part), dtype=np.int64), cache)
            cache.commit(len(part))
            if view is not None:
                view.add(hidden)
            # only the last chunk's last row is sampled from: the head over the whole vocabulary
            # once, not once a chunk (2% of a 700-token prefill of Qwen3-1.7B's widths)
            last_hidden = hidden[-1:].copy()
            status = model.switch_status
            yield Prefill(done=s + len(part), total=len(ids), chunk=len(part), graph=model.prefill_graph,
                          switched_blocks=status.switched if status else 0,
                          total_blocks=status.total if status else 0,
                          exposed_load_ms=status.exposed_ms if status else 0.0, ms=(now() - t0) * 1000,
                          reused=reused)
        # inside the prefill (a backend may tell its passes apart, as the stress bench does)
        last_logits = model.logits(last_hidden)[0] if last_hidden is not None else None
    finally:   # also when the consumer closes this generator mid-prefill
        model.end_prefill()
    if cancelled():
        return None
    topk = view.result() if view is not None else None
    if topk is not None and reused:
        # the kept rows were ranked over the earlier prompt's tokens (calibration_head): drafts
        # only steer what is verified, so a slightly different subset cannot change the output
        topk = (np.concatenate([view_head[0], topk[0]]), np.concatenate([view_head[1], topk[1]]))
    return last_logits, topk


def verify(model: Backend, cache: KVCache, tree: DraftTree, sampler: Sampler,
           constrain: Callable[[np.ndarray], np.ndarray] | None = None,
           penalties: PenaltyRun | None = None) -> tuple[list[int], list[int], np.ndarray]:
    """Feed the tree after the cache in one pass and keep the accepted path's KV entries.
    ``penalties`` penalise each node's logits after its own path; ``constrain`` (a constraint's)
    then sets each node's disallowed logits to -inf, before any pick.
    Returns (accepted node path, root first; emitted tokens, bonus last; argmax after each node)."""
    n = tree.size
    mask = None
    if n > 1:
        mask = np.concatenate([np.ones((n, cache.length), dtype=np.bool_), tree.mask], axis=1)
    hidden = model.forward(tree.tokens, tree.depths + cache.length, cache, mask)
    logits = model.logits(hidden)
    if penalties is not None:
        logits = penalties.apply_tree(logits, tree)
    if constrain is not None:
        logits = constrain(logits)
    next_ids = logits.argmax(-1)
    if n == 1:
        path, bonus = [0], sampler.pick(logits[0])
    elif sampler.greedy:
        path, bonus = greedy_accept(tree, next_ids)
    else:
        path, bonus = sample_accept(tree, sampler.row_probs(logits), sampler.generator)
    cache.commit(n, path if n > 1 else None)
    return path, [tree.token_list[i] for i in path[1:]] + [bonus], next_ids


def decode_step(model: Backend, cache: KVCache, speculator: Speculator, sampler: Sampler,
                constrained: ConstrainedRun | None = None, penalties: PenaltyRun | None = None
                ) -> tuple[list[int], Step] | None:
    """Propose, verify, report back: (emitted tokens, the step's event), or None if the tree
    does not fit in the cache."""
    t0 = now()
    tree = speculator.propose()
    constrain = None
    if constrained is not None:
        tree, constrain = constrained.prepare(tree, speculator.max_tree)
    t1 = now()
    if cache.length + tree.size > cache.capacity:
        return None
    past = cache.length
    path, emitted, next_ids = verify(model, cache, tree, sampler, constrain, penalties)
    t2 = now()
    if constrained is not None:
        constrained.commit(emitted)
    if penalties is not None:
        penalties.commit(emitted)
    speculator.observe(tree, emitted, next_ids, verify_ms=(t2 - t1) * 1000, past=past)
    return emitted, Step(proposed=tree.n, accepted=len(emitted), sources=accepted_sources(tree, path),
                         draft_ms=(t1 - t0) * 1000, verify_ms=(t2 - t1) * 1000,
                         tree_size=tree.n, tree_depth=tree.max_depth)


def decode(model: Backend, cache: KVCache, speculator: Speculator, sampler: Sampler, out: Output,
           totals: Totals, cancelled: Callable[[], bool], constrained: ConstrainedRun | None = None,
           penalties: PenaltyRun | None = None) -> Generator[Event, None, str]:
    """Steps until a stop; yields ``Step`` and ``Text`` events, returns the stop reason."""
    while True:
        if cancelled():
            return "cancelled"
        result = decode_step(model, cache, speculator, sampler, constrained, penalties)
        if result is None:
            return "context_full"
        emitted, step = result
        totals.add(step)
        yield step
        reason = yield from out.emit(emitted)
        if reason:
            return reason


def generate(model: Backend, tokenizer, prompt_ids: list[int], config: GenerationConfig,
             eos_ids: set[int], window: int, speculator: Speculator,
             cancel: threading.Event | None = None, prefixes: PrefixStore | None = None) -> Iterator[Event]:
    """One request's events. ``prefixes``: kept prompts whose KV a prompt starting with the same
    tokens reuses (only its rest is prefilled); the prompt is kept there once prefilled."""
    t_start = now()
    if not prompt_ids:
        raise ValueError("empty prompt")
    sampler = Sampler(config.temperature, config.top_p, config.seed, config.top_k, config.min_p)
    ids, max_new, warning = fit_prompt(list(prompt_ids), window, config.max_new_tokens)
    totals = Totals(len(ids), config.method, t_start)
    if warning:
        yield Notice(warning)
    cancelled = (lambda: cancel is not None and cancel.is_set())

    cache = model.new_cache(len(ids) + max_new + 1 + speculator.max_tree)
    policy = speculator.calibration
    view_key = None if policy is None else (policy.topk, policy.vocab)   # what the view rows depend on
    # an answer's start is no prompt: neither served from nor kept as one (its rows are decoding's)
    answer = min(config.continues, len(ids))
    prompt_part = ids[:len(ids) - answer]
    kept, totals.reused = prefixes.lookup(prompt_part, view_key) if prefixes is not None else (None, 0)
    if kept is not None:
        kept.restore(cache, totals.reused)
    prefilled = yield from prefill(model, ids, cache, config.chunk_size, policy, cancelled, totals.reused,
                                   kept.view_head(totals.reused) if kept is not None else None, answer)
    totals.prefill_ms = (now() - totals.t_start) * 1000
    out = Output(tokenizer, config.stop, eos_ids, max_new)
    stop_reason = "cancelled"
    if prefilled is not None:
        # the first token comes from prefill, like every later bonus token comes from verification
        logits, topk = prefilled
        constrained = ConstrainedRun(config.constraint) if config.constraint is not None else None
        pen = config.penalties
        penalties = (PenaltyRun(pen, ids if pen.penalize_prompt else [], config.breakers)
                     if pen is not None and pen.active else None)
        if penalties is not None:
            logits = penalties.first(logits)
        if constrained is not None:
            logits = constrained.first(logits)
        first = sampler.pick(logits)
        if constrained is not None:
            constrained.commit([first])
        if penalties is not None:
            penalties.commit([first])
        # the speculator's set-up (indexing, calibration) delays the first token's emission: in TTFT
        totals.calibration_ms = speculator.start(ids, first, topk)
        totals.ttft_ms = (now() - totals.t_start) * 1000
        stop_reason = yield from out.emit([first])
        if prefixes is not None and not answer:   # after the first token is out; decoding writes
            prefixes.put(ids, cache, topk, view_key)  # after the prompt's rows
        if not stop_reason:
            stop_reason = yield from decode(model, cache, speculator, sampler, out, totals, cancelled,
                                            constrained, penalties)
    tail = out.stream.flush()
    if tail:
        yield Text(tail)
    done = totals.done(stop_reason, out)   # stamped now: the answer is complete
    if config.keep_answer and prefixes is not None and prefixes.budget and prefilled is not None and out.ids \
            and stop_reason not in ("cancelled", "context_full") and not answer:
        keep_answer(model, cache, ids, out.ids, prefixes, policy, view_key, prefilled[1], config.chunk_size,
                    cancelled)
    yield done


def keep_answer(model: Backend, cache: KVCache, ids: list[int], answer: list[int], prefixes: PrefixStore,
                policy: CalibrationPolicy | None, view_key, topk: ViewRows | None, chunk_size: int,
                cancelled: Callable[[], bool]) -> None:
    """Keep prompt + answer, so the next turn of a chat (which starts with both) prefills only its
    new message. Runs once the answer's text is out, before ``Done`` is yielded (stamped before it):
    inside the request, so an agent saves the answer and a next request starts only after it (run
    after ``Done``, a TUI user's next message overtook the answer's save); a cancel stops it. The
    answer's rows are prefilled again, not taken from decoding: a warm next turn must give a cold
    one's tokens and view rows, and decoding kept no prefill view rows (calibration) and no KV of
    the last token. (Prefill and decoding compute with the same arithmetic and every row alone, so
    the rows' KV would be the same bits; reusing them is not done yet.)"""
    full = ids + list(answer)
    if len(full) > cache.capacity:
        return
    cache.truncate(len(ids))
    # the answer as a warm prompt's rest: prefill after the kept prompt rows (its events unused)
    result = _drain(prefill(model, full, cache, chunk_size, policy if topk is not None else None, cancelled,
                            reused=len(ids), view_head=topk))
    if result is not None:
        prefixes.put(full, cache, result[1], view_key)


def _drain(events: Generator):
    """Run a generator to its end, dropping what it yields; return what it returns."""
    while True:
        try:
            next(events)
        except StopIteration as stop:
            return stop.value
