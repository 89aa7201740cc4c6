"""A GGUF model loaded as its own codes: the architecture, config and tokenizer from the file's
metadata, every weight straight from its blocks into the native kernels' layouts
(``gguf_codes.py``), never through an fp32 copy of the model.

The cache keeps only what is slow to derive and small: ``config.json`` and the tokenizer files
(built from the GGUF's vocabulary once, in a process of its own, 0.2-3 s), and the packed state
(``packed_weights.py``), so later starts read the codes in one go. The architecture is checked
from the header before anything else: a model hexa cannot run is refused in one line, at once.
"""
from __future__ import annotations

import json
import mmap
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import EngineError
from .gguf_codes import HALF_TYPES, MAPPING, NATIVE, as_layout2, as_layout7, decode, k_factors, layout, pack
from .gguf_header import check_architecture
from .gguf_tensors import TensorFile
from ..runtime.kernels import PANEL
from .source import ModelSource

Progress = Callable[[str], None]
GEMMA3_LOCAL_BASE = 10000.0   # llama.cpp's gemma3: local layers' RoPE base (not in the file)
GEMMA3_PATTERN = 6            # llama.cpp's gemma3: every 6th layer global, the rest sliding-window


def config_dict(path: Path, label: str) -> dict:
    """The transformers-style config ``ModelConfig.from_dict`` reads, from the GGUF's metadata and
    tensors (``gguf_tensors``: one pass over the header)."""
    f = TensorFile(path)
    field = f.values.get
    arch = field("general.architecture")
    a = lambda key, default=None: field(f"{arch}.{key}", default)   # noqa: E731
    tensors = {t.name: t for t in f.tensors}
    heads = int(a("attention.head_count"))
    hidden = int(a("embedding_length"))
    scaling = a("rope.scaling.type")
    if scaling not in (None, "none"):
        raise EngineError(f"{label}: RoPE scaling {scaling!r} is not supported")
    rope = {"rope_theta": float(a("rope.freq_base", 10000.0))}
    if "rope_freqs.weight" in tensors:   # Llama 3.x: per-frequency divisors (its rope_scaling, precomputed)
        rope["factors"] = [float(x) for x in np.asarray(tensors["rope_freqs.weight"].data, np.float32)]
    eos = [int(x) for x in (field("tokenizer.ggml.eos_token_id"), field("tokenizer.ggml.eot_token_id"))
           if x is not None]
    vocab = a("vocab_size") or f.lengths.get("tokenizer.ggml.tokens", 0)
    layers = int(a("block_count"))
    extra = {}
    if arch == "gemma3":
        extra = {"hexa_act": "gelu_tanh", "hexa_embed_scale": hidden ** 0.5,
                 "sliding_window": int(a("attention.sliding_window", 512)),
                 "hexa_local_layers": [i for i in range(layers) if (i + 1) % GEMMA3_PATTERN],
                 "rope_local_base_freq": GEMMA3_LOCAL_BASE}
    return extra | {
        "model_type": arch, "vocab_size": int(vocab), "hidden_size": hidden,
        "intermediate_size": int(a("feed_forward_length")), "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": int(a("attention.head_count_kv", heads)),
        "head_dim": int(a("attention.key_length", hidden // heads)),
        "rms_norm_eps": float(a("attention.layer_norm_rms_epsilon", 1e-6)),
        "max_position_embeddings": int(a("context_length", 4096)),
        "tie_word_embeddings": "output.weight" not in tensors,
        "attention_bias": "blk.0.attn_q.bias" in tensors,
        "rope_parameters": rope, "eos_token_id": sorted(set(eos)),
    }


def packed_key(build: str) -> str:
    """The packed file's name for a kernel build: the build and the types' mapping to layouts."""
    return f"{build}-{MAPPING}"


def entry_dir(source: ModelSource, cache_root: Path) -> Path:
    """The cache folder of a GGUF loaded as its codes (config, tokenizer, packed file)."""
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in source.name)
    return Path(cache_root) / f"{safe}-{source.fingerprint()}-gguf"


def entry(source: ModelSource, cache_root: Path, progress: Progress | None = None) -> Path:
    """The cache folder with config.json and the tokenizer; made on first use."""
    check_architecture(source.path, source.name)            # before anything slow
    folder = entry_dir(source, cache_root)
    if (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file():
        return folder
    config = config_dict(source.path, source.name) | {"hexa_name": source.name}
    if progress:
        progress(f"reading {source.name}'s tokenizer (first run only)")
    Path(cache_root).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".tmp-", dir=cache_root))
    try:
        from . import gguf_tokenizer
        gguf_tokenizer.write(source.path, tmp, source.name)   # in a process of its own
        (tmp / "config.json").write_text(json.dumps(config, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _unpermute(rows: int, heads: int) -> np.ndarray:
    """llama.cpp's converter interleaves each head's rotary halves in attn_q/attn_k (row h*D + 2i + t
    holds transformers' row h*D + t*D/2 + i); the source row of each transformers row."""
    D = rows // heads
    h, t, i = np.meshgrid(np.arange(heads), np.arange(2), np.arange(D // 2), indexing="ij")
    return (h * D + 2 * i + t).reshape(-1)


class Weights:
    """The GGUF's tensors by name, as packed weights of the native kernel."""

    def __init__(self, r, config, kernel):
        self.t = {t.name: t for t in r.tensors}
        self.file = getattr(r.data, "_mmap", None)   # the GGUF's mapping (np.memmap's)
        self.config, self.kernel = config, kernel
        self.native = self.half = self.fp32 = 0     # weights kept as codes / 2-byte panels / fp32 panels

    def rows(self, name: str) -> tuple[str, np.ndarray, int, int]:
        t = self.t[name]
        K, N = int(t.shape[0]), int(t.shape[1])
        data = t.data
        c = self.config
        if c.model_type == "llama" and name.endswith(("attn_q.weight", "attn_k.weight")):
            data = data[_unpermute(N, c.num_heads if "attn_q" in name else c.num_kv_heads)]
        return t.tensor_type.name, data, N, K

    def vector(self, name: str) -> np.ndarray | None:
        if name not in self.t:
            return None
        from gguf import quants
        t = self.t[name]
        return np.array(quants.dequantize(t.data, t.tensor_type), np.float32).reshape(-1)

    def packed(self, *names: str):
        """The tensors ``names`` stacked by rows (q, k, v; gate, up) as one PackedWeight: their
        codes when all map to one layout, else fp32 panels."""
        from gguf import quants

        from ..runtime.kernels import PackedWeight
        parts = [self.rows(n) for n in names]
        bits = {NATIVE.get(kind) for kind, *_ in parts}
        N, K = sum(p[2] for p in parts), parts[0][3]
        b = None if None in bits or K % 32 else _mix_layout(bits)
        if b is not None:
            codes, b = self._sliced(parts, b, N, K)
            self.native += N * K
            return PackedWeight(None, (N, K), (codes, b), self.kernel)
        kinds = {kind for kind, *_ in parts}
        if len(kinds) == 1 and next(iter(kinds)) in HALF_TYPES:
            self.half += N * K
            return PackedWeight(self._half_panels(parts, HALF_TYPES[parts[0][0]], N, K), (N, K), None, self.kernel)
        w = np.concatenate([np.asarray(quants.dequantize(data, self.t[n].tensor_type), np.float32).reshape(rows, k)
                            for n, (_, data, rows, k) in zip(names, parts)])
        self.fp32 += N * K
        self.drop_pages()
        return self.kernel.pack(w)

    def _half_panels(self, parts: list, dtype, N: int, K: int) -> np.ndarray:
        """An F16 or BF16 weight's values in fp32 panels' order, kept 2 bytes each (``pack_half``;
        the kernels widen them exactly: fp32 panels' bits), made slice by slice into one buffer."""
        from ..runtime.kernels import pack_half
        out = np.empty(-(-N // PANEL) * PANEL * K, dtype)
        for row, pieces in _slices(parts, K):
            panels = pack_half(np.concatenate([np.asarray(d).view(dtype).reshape(n, K) for _, d, n in pieces]))
            out[row * K:row * K + panels.size] = panels
            self.drop_pages()
        return out

    # the heads a sliced weight tries, in turn: (with a K-quant's factors, compact); slices that
    # choose different heads go to the next, which is the choice packing the whole weight makes
    HEAD_TRIES = ((True, True), (False, True), (False, False))

    def _sliced(self, parts: list, b: int, N: int, K: int) -> tuple[np.ndarray, int]:
        """(codes, bits) of the row-stacked ``parts`` packed ~4M weights at a time, each slice's
        codes written into the whole weight's buffer (its panels' place) as it is made and its
        blocks' pages dropped, so the peak is the packed weight and one slice. Holding the slices
        and joining them took the packed head twice (Gemma-3-1B's 262k-row embedding: a first
        start at 1.57 GB, then 0.92); packing a fused gate/up whole took ~170 MB of temporaries
        (a Q2_K file of Qwen2.5's widths: its first start at 422 MB, a later one at 280)."""
        size = self.kernel.fn["hexa_quant_bytes"]
        for use_k, compact in self.HEAD_TRIES:
            out, bits = None, None
            for row, pieces in _slices(parts, K):
                codes, got = _codes(b, pieces, K, len(parts) > 1, use_k, compact)
                if out is None:
                    out, bits = np.empty(size(got, N, K), np.uint8), got
                elif got != bits:
                    break
                at = size(bits, row, K)
                out[at:at + codes.nbytes] = codes
                self.drop_pages()
            else:
                return out, bits
        raise AssertionError("fp32 heads are one choice for every slice")

    def drop_pages(self) -> None:
        """The GGUF's pages read so far out of this process's resident set (they stay in the page
        cache; a later read maps them again): packed, a tensor's blocks are never read again, and
        a first start of a Qwen2.5-1.5B-sized Q4_K_M file (986 MB) kept 963 MB of them resident
        beside its packed codes, a 2.7 GB peak where later starts take 1.2."""
        if self.file is not None and hasattr(mmap, "MADV_DONTNEED"):
            self.file.madvise(mmap.MADV_DONTNEED)


def _slices(parts: list, K: int) -> list[tuple[int, list]]:
    """[(first row, [(type, blocks, rows)])]: ~4M weights at a time, within one part (each part's
    rows start a panel); every part in one slice where one does not."""
    if any(n % PANEL for _, _, n, _ in parts[:-1]):
        return [(0, [(kind, data, n) for kind, data, n, _ in parts])]
    step = max(PANEL, (1 << 22) // K // PANEL * PANEL)
    out, at = [], 0
    for kind, data, n, _ in parts:
        out += [(at + r, [(kind, data[r:r + step], min(step, n - r))]) for r in range(0, n, step)]
        at += n
    return out


def _codes(b: int, pieces: list, K: int, fused: bool, use_k: bool, compact: bool) -> tuple[np.ndarray, int]:
    """(codes, bits) of ``pieces`` [(type, blocks, rows)] stacked in layout ``b``; a fused
    projection's parts converted to it exactly (Q3_K/4-bit parts into Q2_K's layout 2, mixed
    K-quants into layout 7); a K-quant's factors for a compact head where ``use_k``."""
    if not fused:
        (kind, data, n), = pieces
        return pack(b, *decode(kind, data, n, K), k=k_factors(kind, data, n, K) if use_k else None, compact=compact)
    decoded = [decode(kind, data, n, K) for kind, data, n in pieces]
    ks = [k_factors(kind, data, n, K) if use_k else None for kind, data, n in pieces]
    if b == 2:   # Q2_K with Q3_K / 4-bit parts
        decoded = [as_layout2(NATIVE[kind], *x, k=kx) for (kind, *_), x, kx in zip(pieces, decoded, ks)]
        d, m, q = (np.concatenate([x[i] for x in decoded]) for i in range(3))
        k = None if any(x[3] is None for x in decoded) else tuple(
            np.concatenate([x[3][i] for x in decoded], axis=1) for i in (0, 1))
        return pack(2, d, m, q, k=k, compact=compact)
    if b == 7:
        decoded = [as_layout7(NATIVE[kind], *x) for (kind, *_), x in zip(pieces, decoded)]
        d, m, m2, q = (np.concatenate([x[i] for x in decoded]) for i in range(4))
        return pack(7, d, m, q, m2, compact=compact)
    d, q = (np.concatenate([x[i] for x in decoded]) for i in (0, 2))
    m = np.concatenate([x[1] for x in decoded]) if layout(b) not in (8, 9, 10) else None
    k = None if None in ks else tuple(np.concatenate([x[i] for x in ks], axis=1) for i in (0, 1))
    return pack(b, d, m, q, k=k, compact=compact)


def _mix_layout(bits: set[int]) -> int | None:
    """The layout one fused projection of parts in layouts ``bits`` is packed in: theirs when they
    share one; Q5_0 (9), Q8_0 (8) and one-scale table codes (10: IQ4, IQ3_XXS, ...) share 8's signed
    bytes; Q2_K (2) holds Q3_K (3) and 4-bit (4) parts exactly, and no layout holds its m per 16
    inputs beside 5- to 8-bit codes (None: fp32 panels); layout 7 holds any other mix."""
    lays = {layout(x) for x in bits}
    if len(bits) == 1:
        return next(iter(bits))
    if lays <= {8, 9, 10}:
        return 8
    if 2 in lays:
        return 2 if lays <= {2, 3, 4} else None
    return 7


def packed_state(r, config, kernel) -> dict:
    """The state ``CompactTransformer.from_packed`` builds the model from (``packed_weights``'s)."""
    w = Weights(r, config, kernel)

    def entry_of(p) -> dict:
        if p.quant is not None:
            return {"shape": list(p.shape), "bits": p.bits, "codes": p.quant}
        return {"shape": list(p.shape), "bits": 0, "data": p.data}

    layers = []
    for i in range(config.num_layers):
        b = f"blk.{i}."
        bias = [w.vector(b + f"attn_{n}.bias") for n in "qkv"]
        layers.append({
            "ln_in": w.vector(b + "attn_norm.weight"), "ln_post": w.vector(b + "ffn_norm.weight"),
            "q_norm": w.vector(b + "attn_q_norm.weight"), "k_norm": w.vector(b + "attn_k_norm.weight"),
            "post_attn": w.vector(b + "post_attention_norm.weight"), "post_ffn": w.vector(b + "post_ffw_norm.weight"),
            "bqkv": np.concatenate(bias) if all(x is not None for x in bias) else None,
            "wqkv": entry_of(w.packed(b + "attn_q.weight", b + "attn_k.weight", b + "attn_v.weight")),
            "wo": entry_of(w.packed(b + "attn_output.weight")),
            "wgu": entry_of(w.packed(b + "ffn_gate.weight", b + "ffn_up.weight")),
            "wdown": entry_of(w.packed(b + "ffn_down.weight"))})
    tied = "output.weight" not in w.t
    head = w.packed("token_embd.weight" if tied else "output.weight")
    return {"layers": layers, "norm": w.vector("output_norm.weight"), "lm_head": entry_of(head), "tied": tied,
            "embed": None if tied else w.packed("token_embd.weight"),
            "native_weights": w.native, "half_weights": w.half, "fp32_weights": w.fp32}
