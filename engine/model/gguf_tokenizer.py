"""A GGUF's tokenizer written out as Hugging Face files (tokenizer.json, its config and the chat
template), in a process of its own: run as ``python -m engine.model.gguf_tokenizer MODEL.gguf OUT``.

The two tokenizers the supported architectures ship -- byte-level BPE (Llama 3, Qwen2/3, SmolLM2)
and Gemma's sentencepiece BPE -- are built here from the file's vocabulary with the ``tokenizers``
library alone, as the same files transformers' GGUF converter writes (tests/engine/
test_gguf_tokenizer.py compares them); any other (a Llama 2-style sentencepiece file, a byte-level
split not named here such as Mistral Nemo's tekken) goes through
that converter. Why not the converter for all: on Gemma-3-270M's 262,144 tokens it peaked at
1.03 GB and took 15 s (its reader's objects, a tokenizer class built twice), this 362 MB and 2.7 s;
on a 151,936-token file 424 MB and 5 s, this 104 MB and 0.5 s (measured 2026-12-05). One deliberate
difference: a named token the vocabulary lacks is not appended past the model's rows (``_add_missing``).

Why a process: a first start's vocabulary objects (and transformers, which imports torch, where it
is needed) would stay in the engine's resident set for the session (712 MB instead of 241 on
SmolLM2-135M, 2026-11-28); later starts read the written files with ``tokenizers`` alone
(``tokenizer.py``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..errors import EngineError

TIMEOUT_S = 600   # transformers' converter took 15-40 s on Gemma's 262,144 tokens on 2 cores; the builder 3 s


def write(gguf: Path, out: Path, name: str) -> None:
    """Write ``gguf``'s tokenizer into ``out``; an ``EngineError`` in one line if it cannot."""
    try:
        run = subprocess.run([sys.executable, "-m", __name__, str(gguf), str(out)], capture_output=True,
                             text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineError(f"{name}: cannot read the GGUF's tokenizer ({exc.__class__.__name__})") from None
    if run.returncode != 0:
        lines = run.stderr.strip().splitlines()
        why = lines[-1] if lines else f"the converter ended with status {run.returncode}"
        raise EngineError(f"{name}: cannot read the GGUF's tokenizer ({why[:200]})")


CONTROL, USER_DEFINED = 3, 4            # llama.cpp's token types
ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges")
SPECIAL_IDS = {"bos_token": "bos_token_id", "eos_token": "eos_token_id", "unk_token": "unknown_token_id",
               "pad_token": "padding_token_id"}
SENTENCEPIECE_GEMMA = ("gemma", "gemma2", "gemma3")


class NotCovered(Exception):
    """A tokenizer this module does not build itself (transformers' converter writes it)."""


# the split each byte-level vocabulary's merges were learned with (llama.cpp's tokenizer.ggml.pre),
# as transformers' converter sets it; another name keeps GPT-2's own split
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPLITS = {**dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "smaug-bpe", "dbrx", "falcon3"), _LLAMA3_SPLIT),
          **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez"), _QWEN2_SPLIT)}
GPT2_SPLIT = (None, "default", "gpt-2", "smollm")   # names transformers gives no split of their own;
# any other name (tekken, gpt-4o, ...) goes to transformers' converter, which knows its split


def byte_spelling() -> dict[int, str]:
    """GPT-2's printable character for each byte (byte-level vocabularies are written in these)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), 256)]
    moved = [b for b in range(256) if b not in kept]
    return {**{b: chr(b) for b in kept}, **{b: chr(256 + i) for i, b in enumerate(moved)}}


def read(path: Path) -> tuple[dict, dict[str, list]]:
    from .gguf_header import read_arrays
    return read_arrays(path, ARRAYS)


def tokenizer_config(values: dict, tokens: list[str]) -> dict:
    """bos/eos/unk/pad as the file's tokens, the add-BOS/EOS flags and the chat template."""
    config = {name: (tokens[values[f"tokenizer.ggml.{key}"]] if f"tokenizer.ggml.{key}" in values else None)
              for name, key in SPECIAL_IDS.items()}
    for flag in ("add_bos_token", "add_eos_token"):
        if f"tokenizer.ggml.{flag}" in values:
            config[flag] = values[f"tokenizer.ggml.{flag}"]
    if values.get("tokenizer.ggml.model") == "llama":
        config.setdefault("add_bos_token", True)   # llama.cpp adds BOS to a sentencepiece file that does not say
    if values.get("tokenizer.chat_template"):
        config["chat_template"] = values["tokenizer.chat_template"]
    return config


def build(values: dict, arrays: dict[str, list]):
    """(the ``tokenizers.Tokenizer``, its config) of a byte-level or Gemma vocabulary; NotCovered else."""
    kind, arch = values.get("tokenizer.ggml.model"), values.get("general.architecture")
    tokens = arrays.get("tokenizer.ggml.tokens")
    if not tokens:
        raise NotCovered("no vocabulary")
    pre = values.get("tokenizer.ggml.pre")
    if kind == "gpt2" and "tokenizer.ggml.merges" in arrays and (pre in SPLITS or pre in GPT2_SPLIT):
        tok, named = _byte_level(tokens, arrays["tokenizer.ggml.merges"])
    elif kind == "llama" and arch in SENTENCEPIECE_GEMMA:
        tok, named = _gemma(tokens)
    else:
        raise NotCovered(f"tokenizer {kind!r} of {arch!r}")
    config = tokenizer_config(values, tokens)
    _add_file_tokens(tok, tokens, arrays.get("tokenizer.ggml.token_type") or [], kind == "gpt2")
    _split(tok, pre)
    # the named tokens the file or the class gives become special tokens (as transformers adds them)
    named.update({k: v for k, v in config.items() if k in SPECIAL_IDS})
    _add_missing(tok, [v for v in named.values() if v is not None])
    bos = config["bos_token"] if config.get("add_bos_token") else None
    eos = config["eos_token"] if config.get("add_eos_token") else None
    if "add_bos_token" in config or "add_eos_token" in config:
        _template(tok, bos, eos)
    return tok, config


def _byte_level(tokens: list[str], merges: list[str]):
    from tokenizers import Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE
    spelling = byte_spelling()
    alphabet = set(spelling.values())
    vocab = {t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8")): i
             for i, t in enumerate(tokens)}
    tok = Tokenizer(BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges], dropout=None,
                        continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    _add_missing(tok, ["<|endoftext|>"])          # GPT-2's own unk/bos/eos, where the vocabulary has it
    _template(tok, None, None)
    return tok, {}


def _gemma(tokens: list[str]):
    """Gemma's sentencepiece BPE. A token of two or more spaces is stored as spaces but looked up
    as "▁"s; the file lists no merges, so they are every split of a token into two tokens, ordered
    by the token's place in the file (Gemma's scores do not follow its merge order)."""
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE
    tokens = ["\u2581" * len(t) if " " in t and not t.strip() else t for t in tokens]
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for token, place in vocab.items():
        pairs = [(token[:k], token[k:]) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab]
        pairs.sort(key=lambda p: (vocab[p[0]], vocab[p[1]]))
        merges.extend((place, -len(a), -len(b), a, b) for a, b in pairs)
    merges.sort(key=lambda m: m[:3])
    unk = "<unk>"
    tok = Tokenizer(BPE(vocab=vocab, merges=[(m[3], m[4]) for m in merges], fuse_unk=True, unk_token=unk,
                        dropout=None, byte_fallback=True))
    del merges
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    named = {"unk_token": unk, "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
             "mask_token": "<mask>"}
    _add_missing(tok, list(named.values()))
    _template(tok, None, None)
    return tok, named


def _add_file_tokens(tok, tokens: list[str], types: list[int], byte_level: bool) -> None:
    """Control tokens as special tokens, user-defined ones (``<think>``) as plain added tokens, so
    neither is cut into pieces. A byte-level file's control token spelled outside the byte alphabet
    is a mislabel and is left out (adding it would grow the vocabulary past the model's)."""
    from tokenizers import AddedToken
    alphabet = set(byte_spelling().values()) if byte_level else None
    control = [AddedToken(t, normalized=False, special=True) for t, k in zip(tokens, types)
               if k == CONTROL and (alphabet is None or set(t) <= alphabet)]
    if control:
        tok.add_special_tokens(control)
    vocab = tok.get_vocab()
    user = [AddedToken(t, normalized=False, special=False) for t, k in zip(tokens, types)
            if k == USER_DEFINED and t in vocab]
    if user:
        tok.add_tokens(user)


def _add_missing(tok, names: list[str]) -> None:
    """Named tokens of the vocabulary as special tokens, as transformers adds them -- except one the
    vocabulary lacks (GPT-2's "<|endoftext|>" in Llama 3's): transformers appends it past the
    model's rows, an id the model has no embedding for, where llama.cpp reads it as plain text."""
    from tokenizers import AddedToken
    have = {t.content for t in tok.get_added_tokens_decoder().values()}
    new = []
    for name in names:
        if name not in have and name not in new and tok.token_to_id(name) is not None:
            new.append(name)
    if new:
        tok.add_tokens([AddedToken(n, special=True) for n in new])


def _split(tok, pre: str | None) -> None:
    from tokenizers import Regex, pre_tokenizers
    if pre in SPLITS:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(SPLITS[pre]), behavior="isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def _template(tok, bos: str | None, eos: str | None) -> None:
    """BOS/EOS around a sequence where the file asks for them (transformers' post-processor)."""
    from tokenizers import processors
    single = " ".join([*([f"{bos}:0"] if bos else []), "$A:0", *([f"{eos}:0"] if eos else [])])
    pair = " ".join([single, *([f"{bos}:1"] if bos else []), "$B:1", *([f"{eos}:1"] if eos else [])])
    specials = [(t, tok.token_to_id(t)) for t in (bos, eos) if t]
    tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)


def write_files(tok, config: dict, out: Path) -> None:
    """tokenizer.json, tokenizer_config.json and chat_template.jinja, as ``tokenizer.py`` reads them."""
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    template = config.pop("chat_template", None)
    if template:
        (out / "chat_template.jinja").write_text(template)
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False))


def convert_with_transformers(gguf: Path, out: Path) -> None:
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tok.save_pretrained(out)


def main(argv: list[str]) -> int:
    gguf, out = Path(argv[0]), Path(argv[1])
    try:
        try:
            tok, config = build(*read(gguf))
        except NotCovered:
            convert_with_transformers(gguf, out)
        else:
            write_files(tok, config, out)
    except Exception as exc:   # reported by the parent in one line
        detail = (str(exc).splitlines() or ["no detail"])[0][:160]
        print(f"{exc.__class__.__name__}: {detail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
