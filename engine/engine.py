"""The engine facade the agents, the CLI and the benchmark use."""
from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from . import threads as _threads
from .runtime.backend import Backend
from .decoding.grammar import Constraint, Grammar
from .decoding.drafting import ConfidenceMap, HistoryIndex
from .errors import EngineError
from .events import Event
from .decoding.generation import GenerationConfig, generate
from .methods import BACKENDS, DEFAULT_CONTEXT, METHODS, MethodSpec, check_backend, method_spec
from .model.cache import ensure_cached
from .model.source import resolve
from .options import EngineOptions
from .model.tokenizer import TokenText
from .decoding.penalties import Penalties, breaker_ids
from .runtime.profiling import OnlineCost, device_cost_model, load_or_profile, profile_cpu_side, profile_key
from .decoding.speculative import MAX_DEPTH, DraftingSpeculator, PlainDecoding, Speculator

if TYPE_CHECKING:
    from .model.config import ModelConfig

__all__ = ["BACKENDS", "METHODS", "Engine"]

END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<|end_of_text|>")


class Engine:
    def __init__(self, model: Backend, tokenizer, folder: Path, name: str, backend: str, threads: int,
                 context_window: int, load_seconds: float, cache_dir: Path | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.folder = folder
        self.model_name = name
        self.backend_name = backend
        self.threads = threads
        self.context_window = context_window
        self.load_seconds = load_seconds
        self.cache_dir = cache_dir           # where the cost profile is kept; None: not kept
        self.source = None                   # the ModelSource it was loaded from (set by ``load``)
        self.history = HistoryIndex()        # completed responses, indexed once, future drafting sources
        self._cost = None
        self._online_cost: OnlineCost | None = None   # the profile corrected by observed verification times
        self._confidence: dict[str, ConfidenceMap] = {}   # per method, learned across requests
        self._vocab = None                   # the vocabulary index constraints compile against
        self._breakers: dict[tuple[str, ...], frozenset[int]] = {}   # DRY's breaker tokens, by breakers
        self.eos_ids = set(model.config.eos_ids)
        for tok in END_OF_TURN + ((tokenizer.eos_token,) if tokenizer.eos_token else ()):
            tid = tokenizer.convert_tokens_to_ids(tok)
            if tid is not None and tid != tokenizer.unk_token_id:
                self.eos_ids.add(tid)
        from .decoding.prefix_cache import PrefixStore
        from .runtime.transformer import CompactTransformer

        # Recent prompts' KV, reused by prompts that start alike (prefix_cache.py). Only the torch
        # runtime: the qnn graphs do prefill from any cache length, but the HTP's fp16 rows depend
        # on where they fall in its 64-row prefill pieces (K/V off by up to 0.07, measured), so a
        # warm request could decode unlike a cold one. K/V cost 2 x layers x kv_heads x head_dim x
        # 4 bytes a token: 46 KB for SmolLM2-135M (30 x 3 x 64), 377 MB for the 8192 tokens of two
        # full 4096-token windows (a chat and a document); bigger models keep fewer, within 512 MB.
        budget = 0
        if isinstance(model, CompactTransformer):
            c = model.config
            budget = min(2 * context_window, (512 << 20) // (8 * c.num_layers * c.num_kv_heads * c.head_dim))
        self.prefixes = PrefixStore(budget)

    @classmethod
    def load(cls, model: str | None, cache_dir: Path, backend: str = "torch", threads: int | None = None,
             context_window: int | None = None, progress: Callable[[str], None] | None = None,
             soc: str | None = None, cost_profile: str | None = None,
             options: EngineOptions | None = None) -> "Engine":
        """Load ``model`` (None: the embedded one) for ``backend``. ``threads``: None uses every
        usable core. ``progress`` hears about the slow first-start steps (converting the model,
        compiling the native kernels or the QNN graphs). qnn only: ``soc`` names the Snapdragon
        the graphs are built for; ``cost_profile`` (a file or a profiled device's name) replaces
        the measured costs in tree sizing and switching plans. ``options``: the advanced knobs
        (kernel, arithmetic, pool spin, graph layout), checked by the caller's settings."""
        check_backend(backend)
        t0 = time.perf_counter()
        options = options or EngineOptions()
        linear = options.linear
        source = resolve(model)
        if source.kind == "gguf":   # an architecture hexa cannot run is refused here, in one line
            from .model.gguf_header import check_architecture
            check_architecture(source.path, source.name)
        n_threads = _threads.configure(threads)
        from .model.tokenizer import ChatTokenizer
        from .heap import release_freed
        from .runtime.transformer import CompactTransformer

        # a GGUF on the native kernels is read as its own codes (no fp32 copy); its config and
        # tokenizer come first, so a broken file fails before the kernels are built
        direct = source.kind == "gguf" and backend == "torch" and linear == "native"
        if direct:
            from .model.gguf_model import entry
            folder = entry(source, Path(cache_dir) / "models", progress)
        else:
            folder = ensure_cached(source, Path(cache_dir) / "models", progress)
        kernel = None
        # the qnn backend runs the layers on the HTP and builds its graphs from the raw weights
        if backend == "torch" and linear == "native":
            from .runtime.kernels import native_kernel

            kernel, why_not = native_kernel(Path(cache_dir), n_threads, progress, options)
            if kernel is not None:
                _threads.quiet_blas()
        if direct and kernel is None:   # the reference layers run the fp32 conversion
            direct = False
            folder = ensure_cached(source, Path(cache_dir) / "models", progress)
        if progress:
            progress("loading weights")
        try:
            # the tokenizer first, its parse's garbage returned before the weights arrive: loaded
            # after them, Gemma-3-270M's ~200 MB of it stacked on the weights (peak 925 MB)
            tokenizer = ChatTokenizer(folder)
            release_freed()
            compact = (CompactTransformer.load_gguf(folder, source.path, kernel, linear, options.decode,
                                                    fits=_fits(source.path.name, backend, context_window, options))
                       if direct
                       else CompactTransformer.load(folder, linear, kernel, options.decode))
        except EngineError:
            raise
        except Exception as exc:  # a cache that validated but still cannot load
            raise EngineError(f"cannot load cached model {folder}: {exc.__class__.__name__}") from None
        compact.use_kv(options.kv)
        compact.prompt_bf16 = options.prompt == "bf16"
        if backend == "torch" and linear == "native" and kernel is None and progress:
            progress(f"native kernel unavailable ({why_not}); using {compact.kernel}")
        window = _window(compact.config.max_positions, context_window, backend)
        runtime: Backend = compact
        if backend == "qnn":
            from .runtime.qnn import QnnTransformer

            runtime = QnnTransformer(compact, Path(cache_dir), folder.name, window, progress=progress,
                                     soc=soc, cost_profile=cost_profile, progressive=options.qnn_switch,
                                     shared=options.qnn_shared, early_switch=options.qnn_early_switch)
            graph_context, window = window, window - runtime.max_draft - 1   # the last step's tree must fit too
            if window < 16:
                raise EngineError(f"context {graph_context} is too small for the qnn graphs")
        # the imports (tokenizers, gguf, numpy) leave long-lived objects; a full GC pass over them
        # (~70 ms) landing inside a decoding step would cost more than the step. Freeze them.
        gc.collect()
        gc.freeze()
        engine = cls(runtime, tokenizer, folder, source.name, backend, n_threads, window,
                     time.perf_counter() - t0, Path(cache_dir))
        engine.source = source
        return engine

    # ---- text <-> tokens
    def encode(self, text: str) -> list[int]:
        return TokenText(self.tokenizer).encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return TokenText(self.tokenizer).decode(ids)

    def chat_ids(self, messages: list[dict]) -> list[int]:
        return TokenText(self.tokenizer).chat_ids(messages)

    # ---- generation
    def generate(self, prompt: list[dict] | list[int] | str, *, max_new_tokens: int = 256,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
                 stop: Sequence[str] = (), method: str = "vanilla",
                 sources: Sequence[Sequence[int]] = (), cancel: threading.Event | None = None,
                 chunk_size: int = 256, constraint: Constraint | Grammar | None = None,
                 reuse: bool = True, keep_answer: bool = False, top_k: int = 0, min_p: float = 0.0,
                 penalties: Penalties | None = None, continues: int = 0) -> Iterator[Event]:
        """Stream one request's events. ``constraint``: only the tokens it allows are emitted
        (a ``Grammar`` is compiled here; compile once with ``constraint()`` to reuse it).
        ``reuse``: serve the prompt's start from a recent prompt's KV when they share it (the
        output is a cold run's), and keep this prompt's for later requests. ``keep_answer``: keep
        prompt + answer instead (a chat, whose next prompt continues with both), at the cost of
        prefilling the answer once more before ``Done``; a one-shot request has no use for it.
        ``top_k``/``min_p`` (sampling only) and ``penalties`` are llama.cpp's samplers of the same
        names (``engine/decoding/sampling.py``, ``engine/decoding/penalties.py``); every method stays lossless.
        ``continues``: the prompt's last ``continues`` tokens are the start of this model's own
        answer (a migrated one), fed as decoding fed them, so that it goes on as it would have."""
        spec = method_spec(method)
        if isinstance(constraint, Grammar):
            constraint = self.constraint(constraint)
        if constraint is not None and constraint.vocab is not self._vocab:
            raise EngineError("the constraint was compiled for another engine's vocabulary")
        if max_new_tokens < 1:
            raise EngineError("max_new_tokens must be at least 1")
        from .decoding.sampling import check_sampling

        try:
            check_sampling(temperature, top_p, top_k, min_p)
            if penalties is not None:
                penalties.check()
        except ValueError as exc:
            raise EngineError(str(exc)) from None
        if isinstance(prompt, str):
            ids = self.chat_ids([{"role": "user", "content": prompt}])
        elif prompt and isinstance(prompt[0], dict):
            ids = self.chat_ids(list(prompt))
        else:
            ids = list(prompt)
        if not ids:
            raise EngineError("empty prompt")
        rows = self.model.config.vocab_size
        if not _in_vocab(ids, rows):
            bad = next((t for t in ids if not _in_vocab([t], rows)), None)
            raise EngineError(f"the prompt holds token id {bad!r}, outside the model's vocabulary of {rows} tokens")
        # a source of another vocabulary (a stored reply of another model) drafts nothing worth having
        sources = [s for s in sources if _in_vocab(s, rows)]
        config = GenerationConfig(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                                  seed=seed, stop=tuple(stop), method=method, chunk_size=chunk_size,
                                  constraint=constraint, keep_answer=keep_answer, top_k=top_k, min_p=min_p,
                                  continues=max(0, continues),
                                  penalties=penalties if penalties is not None and penalties.active else None,
                                  breakers=self.breakers(penalties.dry_breakers)
                                  if penalties is not None and penalties.dry_active else frozenset())
        return generate(self.model, self.tokenizer, ids, config, self.eos_ids, self.context_window,
                        self._speculator(method, spec, sources), cancel,
                        prefixes=self.prefixes if reuse else None)

    def resident_bytes(self) -> dict[str, int]:
        """What the engine holds in memory beyond the Python runtime, by part: the weights as the
        backend keeps them, and the kept prompts' KV (shown by the TUI's Device panel)."""
        weights = getattr(self.model, "weight_bytes", None)   # the qnn graphs hold theirs in QNN's memory
        parts = {"weights": weights()} if weights else {}
        return parts | {"kept KV": self.prefixes.nbytes()}

    def forget_prefixes(self) -> None:
        """Drop every kept prompt's KV: the next request prefills its whole prompt (a cold run)."""
        self.prefixes.clear()

    def breakers(self, breakers: tuple[str, ...]) -> frozenset[int]:
        """The tokens holding one of DRY's sequence breakers (found once per set: ~0.3 s for 49k tokens)."""
        if breakers not in self._breakers:
            from .model.vocab import token_texts

            self._breakers[breakers] = breaker_ids(token_texts(self.tokenizer, self.model.config.vocab_size),
                                                   breakers)
        return self._breakers[breakers]

    def constraint(self, grammar: Grammar) -> Constraint:
        """``grammar`` compiled against this engine's vocabulary and end-of-turn tokens. The
        vocabulary index is built on the first call (~0.35 s for SmolLM2's 49k tokens)."""
        if self._vocab is None:
            from .model.vocab import VocabIndex

            self._vocab = VocabIndex.from_tokenizer(self.tokenizer, self.model.config.vocab_size)
        return Constraint(grammar, self._vocab, self.eos_ids)

    def _speculator(self, method: str, spec: MethodSpec | None, sources: Sequence[Sequence[int]]
                    ) -> Speculator:
        """The method's speculator for one request; ``sources`` and the engine's history are its
        history drafting sources (indexed when the request starts: the engine's automaton as it
        is, ``sources`` apart). The cost profile and confidence maps are the engine's, kept
        across requests."""
        if spec is None:
            return PlainDecoding()
        if method not in self._confidence:
            self._confidence[method] = ConfidenceMap()
        if self._online_cost is None:
            # a device profile's times stay as they are: this machine's verification times are not the device's
            self._online_cost = OnlineCost(self.cost_curve(), learn=self.cost_profile is None)
        draft = self.model.max_draft                  # a static-shape backend caps the tree
        return DraftingSpeculator(spec, self.history, self._online_cost, max_tree=draft,
                                  max_depth=min(MAX_DEPTH, draft), confidence=self._confidence[method],
                                  sources=sources)

    @property
    def cost_profile(self):
        """The device cost profile the qnn backend plans with (``--cost-profile``), else None."""
        return self.model.cost_profile if self.backend_name == "qnn" else None

    def cost_curve(self):
        """Forward cost (ms) by tokens fed and context length, profiled once on this backend (a
        ``profiling.CostModel``); drives draft-tree sizing. With a device cost profile: the
        device's graph times, plus the CPU side of a step (embedding, graph inputs, output
        head) as measured here."""
        if self._cost is None:
            device = self.cost_profile
            path = None
            if self.cache_dir is not None:
                key = profile_key(self.model, self.folder.name, self.threads)
                path = self.cache_dir / "profiles" / f"{key}{'-cpu-side' if device else ''}.json"
            if device is None:
                self._cost = load_or_profile(self.model, path)
            else:
                cpu_side = load_or_profile(self.model, path, profiler=profile_cpu_side)
                self._cost = device_cost_model(device, len(self.model.blocks), self.model.graph_for, cpu_side)
        return self._cost

    def index_response(self, token_ids: Sequence[int]) -> None:
        """Keep a completed response as a drafting source for later requests (indexed now, once;
        call between requests; the oldest responses go past the history's token budget)."""
        if token_ids and _in_vocab(token_ids, self.model.config.vocab_size):
            self.history.add(token_ids)


def _window(max_positions: int, context_window: int | None, backend: str) -> int:
    """The context window a request may fill: the one asked for (else the backend's default), at
    most what the model allows."""
    return min(max_positions, context_window or DEFAULT_CONTEXT[backend])


def _fits(label: str, backend: str, context_window: int | None,
          options: EngineOptions) -> Callable[[ModelConfig, int, dict[str, int]], None]:
    """The memory check a GGUF's load asks before packing or reading its weights: they and one
    request's KV cache at the context window must fit in what the system has left."""
    from .heap import available_memory
    from .model.footprint import check_fits, kv_bytes
    from .options import kv_f16

    f16 = kv_f16(options.kv, True, options.decode == "exact")
    return lambda config, weights, fp32: check_fits(
        label, weights, kv_bytes(config, _window(config.max_positions, context_window, backend), f16),
        available_memory(), fp32)


def _in_vocab(ids: Sequence[int], rows: int) -> bool:
    """Every id an integer naming a row of the model's embedding, which the kernels read unchecked
    (49152 read past SmolLM2's rows and answered)."""
    import numpy as np
    try:
        a = np.asarray(ids)
    except (TypeError, ValueError):
        return False
    return not a.size or (a.ndim == 1 and a.dtype.kind in "iu" and a.min() >= 0 and a.max() < rows)
