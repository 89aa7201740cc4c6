"""GGUFs with the shapes of real models and random weights, for checks without downloading them.

``write(path, shape, kind)`` writes a model of ``shape`` (widths, heads, layers of a real model;
``SHAPES``) whose weights are random (seeded), quantized by the ``gguf`` package (Q8_0, Q4_0,
Q4_1, Q5_0) or left F16 for llama.cpp's quantizer to turn into a K-quant mix. The tokenizer and
chat template are the embedded SmolLM2's (a GPT-2 BPE of 49,152 tokens); ``real_vocab`` pads the
vocabulary to the real model's size (``Shape.vocab``) with tokens no text produces, so the
embedding and the tied head are as large as the real model's, the decoding step's largest product
on these widths. Norm weights are near 1 and projections scaled by 1/sqrt(width),
so activations stay in range through the layers as in a trained model.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

VOCAB = 49152


@dataclass(frozen=True)
class Shape:
    arch: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    rope_base: float = 1e6
    vocab: int = VOCAB     # the real model's vocabulary (config.json's vocab_size)


SHAPES = {   # the real models' widths and vocabularies (config.json of each); layers as given
    "qwen2.5-1.5b": Shape("qwen2", 1536, 28, 12, 2, 128, 8960, vocab=151936),
    "qwen3-1.7b": Shape("qwen3", 2048, 28, 16, 8, 128, 6144, vocab=151936),
    "llama-3.2-3b": Shape("llama", 3072, 28, 24, 8, 128, 8192, 500000.0, vocab=128256),
    "gemma-3-1b": Shape("gemma3", 1152, 26, 4, 1, 256, 6912, vocab=262144),
}


def _tokenizer_fields(writer, vocab: int = VOCAB) -> None:
    """SmolLM2's tokenizer and chat template, copied from the embedded GGUF; tokens past its own up
    to ``vocab`` are unused ones (no merge makes them, so no text tokenizes to them)."""
    import gguf

    from ..model.source import embedded_gguf
    r = gguf.GGUFReader(embedded_gguf())
    f = lambda k: r.fields[k].contents()   # noqa: E731
    writer.add_tokenizer_model(f("tokenizer.ggml.model"))
    writer.add_tokenizer_pre(f("tokenizer.ggml.pre"))
    pad = range(VOCAB, vocab)
    writer.add_token_list([*f("tokenizer.ggml.tokens"), *(f"<unused{i}>" for i in pad)])
    writer.add_token_types([*f("tokenizer.ggml.token_type"), *(gguf.TokenType.UNUSED for _ in pad)])
    writer.add_token_merges(f("tokenizer.ggml.merges"))
    writer.add_bos_token_id(f("tokenizer.ggml.bos_token_id"))
    writer.add_eos_token_id(f("tokenizer.ggml.eos_token_id"))
    writer.add_chat_template(f("tokenizer.chat_template"))


def write(path: Path, s: Shape, kind: str = "Q8_0", layers: int | None = None, seed: int = 0,
          real_vocab: bool = False) -> Path:
    """A GGUF of shape ``s`` (``layers`` overrides its depth) with random weights in ``kind``, its
    vocabulary SmolLM2's or (``real_vocab``) padded to the real model's."""
    import gguf
    from gguf import quants

    rng = np.random.default_rng(seed)
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    n_layers = layers or s.layers
    w = gguf.GGUFWriter(str(path), s.arch)
    w.add_block_count(n_layers)
    w.add_context_length(4096)
    w.add_embedding_length(s.hidden)
    w.add_feed_forward_length(s.ffn)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_key_length(s.head_dim)
    w.add_value_length(s.head_dim)
    w.add_rope_freq_base(s.rope_base)
    w.add_layer_norm_rms_eps(1e-6)
    vocab = s.vocab if real_vocab else VOCAB
    w.add_vocab_size(vocab)
    if s.arch == "gemma3":
        w.add_sliding_window(512)
    _tokenizer_fields(w, vocab)

    def matrix(name: str, rows: int, cols: int, scale: float | None = None) -> None:
        x = rng.standard_normal((rows, cols), dtype=np.float32) * (scale or cols ** -0.5)
        if kind in ("F16", "F32"):
            w.add_tensor(name, x.astype(np.float16 if kind == "F16" else np.float32))
        else:
            w.add_tensor(name, quants.quantize(x, qtype), raw_shape=quants.quant_shape_to_byte_shape((rows, cols), qtype),
                         raw_dtype=qtype)

    def norm(name: str, n: int) -> None:
        v = 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)
        w.add_tensor(name, v)   # gemma3 too: its GGUF norms already hold the +1 (what llama.cpp multiplies by)

    matrix("token_embd.weight", vocab, s.hidden, 1.0 if s.arch == "gemma3" else 0.05)
    norm("output_norm.weight", s.hidden)
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    for i in range(n_layers):
        b = f"blk.{i}."
        norm(b + "attn_norm.weight", s.hidden)
        matrix(b + "attn_q.weight", q, s.hidden)
        matrix(b + "attn_k.weight", kv, s.hidden)
        matrix(b + "attn_v.weight", kv, s.hidden)
        if s.arch == "qwen2":
            for n, rows in (("q", q), ("k", kv), ("v", kv)):
                w.add_tensor(b + f"attn_{n}.bias", 0.02 * rng.standard_normal(rows, dtype=np.float32))
        if s.arch in ("qwen3", "gemma3"):
            norm(b + "attn_q_norm.weight", s.head_dim)
            norm(b + "attn_k_norm.weight", s.head_dim)
        matrix(b + "attn_output.weight", s.hidden, q)
        norm(b + "ffn_norm.weight", s.hidden)
        if s.arch == "gemma3":
            norm(b + "post_attention_norm.weight", s.hidden)
            norm(b + "post_ffw_norm.weight", s.hidden)
        matrix(b + "ffn_gate.weight", s.ffn, s.hidden)
        matrix(b + "ffn_up.weight", s.ffn, s.hidden)
        matrix(b + "ffn_down.weight", s.hidden, s.ffn)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


LLAMA_FTYPES = {"Q4_K_M": 15, "Q8_0": 7, "Q4_0": 2, "Q5_K_M": 17, "Q6_K": 18,   # llama_ftype's values
                "Q3_K_M": 12, "IQ4_NL": 25, "IQ4_XS": 30, "IQ3_M": 27, "Q2_K": 10}   # IQ3_XXS, IQ2_*, IQ1_* need an imatrix


def quantize_with_llamacpp(src: Path, out: Path, kind: str = "Q4_K_M") -> Path:
    """``src`` requantized by llama.cpp's own quantizer (llama-cpp-python's C API, in a subprocess:
    it prints to the process's stdout), written to ``out`` whole or not at all."""
    import subprocess
    import sys

    code = ("import ctypes, sys, llama_cpp\n"
            "p = llama_cpp.llama_model_quantize_default_params()\n"
            f"p.ftype = {LLAMA_FTYPES[kind]}; p.allow_requantize = True; p.nthread = 2\n"
            "sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))\n")
    tmp = out.with_suffix(".tmp")
    done = subprocess.run([sys.executable, "-c", code, str(src), str(tmp)], capture_output=True, text=True, timeout=900)
    if done.returncode:   # llama_cpp missing, or the quantizer refused: its last line says which
        last = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[-1]
        tmp.unlink(missing_ok=True)
        raise SystemExit(f"random_gguf: llama.cpp's quantizer failed on {src.name}: {last}")
    tmp.rename(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m engine.bench.random_gguf SHAPE|smollm2 --out FILE [--layers N] [--kind Q4_K_M]``:
    the benchmark's model files (a shape's random weights, or the embedded SmolLM2, requantized by
    llama.cpp's quantizer)."""
    import argparse
    import tempfile

    p = argparse.ArgumentParser(prog="python -m engine.bench.random_gguf", description=main.__doc__.split(":")[0])
    p.add_argument("shape", choices=sorted(SHAPES) + ["smollm2"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--layers", type=int, default=4, help="layers of the shape (default 4)")
    p.add_argument("--kind", default="Q4_K_M", choices=sorted(LLAMA_FTYPES))
    p.add_argument("--real-vocab", action="store_true",
                   help="pad the vocabulary to the real model's (SmolLM2's 49,152 tokens otherwise)")
    a = p.parse_args(argv)
    if a.shape == "smollm2" and a.real_vocab:
        p.error("--real-vocab pads a shape's vocabulary; smollm2's is its own")
    if a.shape == "smollm2":
        from ..model.source import embedded_gguf
        quantize_with_llamacpp(Path(embedded_gguf()), a.out, a.kind)
    else:
        with tempfile.TemporaryDirectory(dir=a.out.parent) as tmp:
            f16 = write(Path(tmp) / "f16.gguf", SHAPES[a.shape], "F16", layers=a.layers, real_vocab=a.real_vocab)
            quantize_with_llamacpp(f16, a.out, a.kind)
    print(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
