"""One request, end to end: chunked prefill, then decoding steps, streamed as events.

Decoding is written once for both plain and speculative decoding: each step feeds the pending token
(the last generated token, not yet in the KV cache) plus an optional draft tree, keeps the KV entries
of the accepted path, and emits the accepted tokens plus the model's own next token.
"""
from __future__ import annotations

import resource
import threading
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch

from .drafting.accept import greedy_accept, sample_accept
from .drafting.tree import root_only
from .events import Done, Event, Notice, Prefill, Step, Text, now
from .sampling import Sampler
from .text_stream import TextStream
from .transformer import CompactTransformer

PROMPT_HEAD_KEEP = 64  # tokens kept from the start of an over-long prompt (system prompt, task)


@dataclass
class GenerationConfig:
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: Sequence[str] = ()
    method: str = "vanilla"
    chunk_size: int = 256
    calibration_topk: int = 0   # >0: keep the top-k next tokens of every prompt position (calibration)
    calibration_vocab: int = 4096  # calibration ranks the prompt's tokens + the first N ids (0: all)


def fit_prompt(ids: list[int], window: int, max_new: int) -> tuple[list[int], int, str | None]:
    """Cut a prompt that leaves too little room: keep its head and its most recent tokens."""
    max_new = max(1, min(max_new, window // 2)) if len(ids) + max_new > window else max_new
    room = window - max_new
    if len(ids) <= room:
        return ids, max_new, None
    head = min(PROMPT_HEAD_KEEP, room // 4)
    cut = ids[:head] + ids[len(ids) - (room - head):]
    return cut, max_new, (f"prompt of {len(ids)} tokens exceeds the context window ({window} tokens, "
                          f"{max_new} reserved for the answer): kept the first {head} and the last "
                          f"{room - head} tokens, dropped {len(ids) - len(cut)} in the middle")


def calibration_head(model: CompactTransformer, ids: list[int], first_ids: int
                     ) -> tuple[torch.Tensor | None, torch.Tensor]:
    """The output-projection rows calibration ranks: the prompt's own tokens + the ``first_ids``
    lowest ids (BPE merge order: the frequent words and punctuation), or all rows if 0.

    Calibration needs the model's top next tokens at *every* prompt position; the full
    vocabulary (49k rows for SmolLM2) made that ~2 ms and ~60 MFLOP per prompt token, more than
    the rest of the forward. Drafts copied or paraphrased from the context are almost always
    prompt tokens or common ones, and probabilities normalised over the subset only overestimate
    (the drafter rescales each source by its observed acceptance). Lossless either way: drafts
    only steer what is verified.
    """
    head = model.lm_head
    V = head.shape[0]
    if first_ids <= 0 or first_ids >= V:
        return None, head
    vocab = torch.tensor(sorted(set(range(first_ids)) | {t for t in ids if 0 <= t < V}), dtype=torch.long)
    return vocab, head[vocab]


def peak_memory_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(model: CompactTransformer, tokenizer, prompt_ids: list[int], config: GenerationConfig,
             eos_ids: set[int], window: int, speculator=None,
             cancel: threading.Event | None = None) -> Iterator[Event]:
    t_start = now()
    if not prompt_ids:
        raise ValueError("empty prompt")
    sampler = Sampler(config.temperature, config.top_p, config.seed)
    ids, max_new, warning = fit_prompt(list(prompt_ids), window, config.max_new_tokens)
    if warning:
        yield Notice(warning)
    cancelled = (lambda: cancel is not None and cancel.is_set())

    # ---- prefill (chunked); logits of the last position give the first new token
    cache = model.new_cache(len(ids) + max_new + 1 + _tree_room(speculator))
    topk_ids, topk_p = [], []
    calib_vocab = calib_head = None
    if config.calibration_topk:
        calib_vocab, calib_head = calibration_head(model, ids, config.calibration_vocab)
    last_logits = None
    chunk = max(1, config.chunk_size)
    switching = getattr(model, "switch_status", None) is not None   # a static-graph backend
    if switching:
        model.begin_prefill(len(ids))
    try:
        for s in range(0, len(ids), chunk):
            if cancelled():
                break
            t0 = now()
            part = torch.tensor(ids[s:s + chunk])
            hidden = model.forward(part, torch.arange(s, s + len(part)), cache)
            cache.commit(len(part))
            if config.calibration_topk:
                probs = torch.softmax(model.linear(hidden, calib_head), dim=-1)
                p, i = probs.topk(min(config.calibration_topk, probs.shape[-1]), dim=-1)
                topk_ids.append(i if calib_vocab is None else calib_vocab[i])
                topk_p.append(p)
            last_logits = model.logits(hidden[-1:])[0]
            status = model.switch_status if switching else None
            yield Prefill(done=s + len(part), total=len(ids), chunk=len(part),
                          graph=getattr(model, "prefill_graph", "torch:dynamic"),
                          switched_blocks=status.switched if status else 0,
                          total_blocks=status.total if status else 0,
                          exposed_load_ms=status.exposed_ms if status else 0.0, ms=(now() - t0) * 1000)
    finally:   # also when the consumer closes this generator mid-prefill
        if switching:
            model.end_prefill()
    t_prefill = now()
    prefill_ms = (t_prefill - t_start) * 1000

    stream = TextStream(tokenizer, config.stop)
    out: list[int] = []
    steps = 0
    draft_ms = verify_ms = calib_ms = 0.0
    by_source: dict[str, int] = {}
    stop_reason = "cancelled" if last_logits is None else ""
    ttft_ms = 0.0
    pending = None
    if not stop_reason:
        pending = sampler.pick(last_logits)
        ttft_ms = (now() - t_start) * 1000
    if speculator is not None and pending is not None:
        topk = (torch.cat(topk_ids), torch.cat(topk_p)) if topk_ids else None
        calib_ms = speculator.start(ids, pending, topk)

    def emit(tokens: list[int]) -> tuple[str, str]:
        """Append tokens, detect EOS / stop strings / length; return (text delta, stop reason)."""
        reason = ""
        for k, tok in enumerate(tokens):
            if tok in eos_ids:
                tokens, reason = tokens[:k], "eos"
                break
        if not reason and len(out) + len(tokens) >= max_new:
            tokens, reason = tokens[:max_new - len(out)], "max_tokens"
        out.extend(tokens)
        delta = stream.push(tokens)
        if stream.stopped:
            reason = "stop_string"
        return delta, reason

    # The first token comes from prefill, like every later bonus token comes from verification.
    if pending is not None:
        delta, stop_reason = emit([pending])
        if delta:
            yield Text(delta)

    while not stop_reason:
        if cancelled():
            stop_reason = "cancelled"
            break
        t0 = now()
        tree = speculator.propose() if speculator is not None else root_only(pending)
        t1 = now()
        n = tree.size
        if cache.length + n > cache.capacity:
            stop_reason = "context_full"
            break
        past = cache.length
        mask = None
        if n > 1:
            mask = torch.cat([torch.ones(n, cache.length, dtype=torch.bool), tree.mask], dim=1)
        hidden = model.forward(tree.tokens, tree.depths + cache.length, cache, mask)
        logits = model.logits(hidden)
        next_ids = logits.argmax(-1)
        if n == 1:
            path, bonus = [0], sampler.pick(logits[0])
        elif sampler.greedy:
            path, bonus = greedy_accept(tree, next_ids)
        else:
            path, bonus = sample_accept(tree, sampler.probs(logits), sampler.generator)
        cache.commit(n, path if n > 1 else None)
        accepted = [tree.token_list[i] for i in path[1:]] + [bonus]
        t2 = now()
        if speculator is not None:
            speculator.observe(tree, accepted, next_ids, verify_ms=(t2 - t1) * 1000, past=past)
        sources = [tree.sources[i] for i in path[1:]] + ["model"]
        for s in sources:
            by_source[s] = by_source.get(s, 0) + 1
        steps += 1
        draft_ms += (t1 - t0) * 1000
        verify_ms += (t2 - t1) * 1000
        pending = accepted[-1]
        yield Step(proposed=n - 1, accepted=len(accepted), sources=tuple(sources),
                   draft_ms=(t1 - t0) * 1000, verify_ms=(t2 - t1) * 1000,
                   tree_size=n - 1, tree_depth=tree.max_depth)
        delta, stop_reason = emit(accepted)
        if delta:
            yield Text(delta)

    tail = stream.flush()
    if tail:
        yield Text(tail)
    t_end = now()
    decode_ms = (t_end - t_prefill) * 1000
    n_new = len(out)
    yield Done(
        stop_reason=stop_reason, text=stream.text, token_ids=tuple(out), prompt_tokens=len(ids),
        new_tokens=n_new, ttft_ms=ttft_ms, prefill_ms=prefill_ms,
        prefill_tok_s=len(ids) / max(prefill_ms / 1000, 1e-9),
        decode_ms=decode_ms, decode_tok_s=n_new / max(decode_ms / 1000, 1e-9),
        ms_per_token=decode_ms / max(n_new, 1), steps=steps,
        mean_accepted=(sum(by_source.values()) / steps) if steps else 0.0,
        draft_ms=draft_ms, verify_ms=verify_ms, calibration_ms=calib_ms,
        accepted_by_source=by_source, peak_memory_mb=peak_memory_mb(), method=config.method)


def _tree_room(speculator) -> int:
    return getattr(speculator, "max_tree", 0) if speculator is not None else 0
