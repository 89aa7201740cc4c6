"""A GGUF's tokenizer built from its vocabulary with the ``tokenizers`` library alone must be the
tokenizer transformers' GGUF converter writes: the same tokenizer.json (vocabulary, merges, added
tokens, normalizer, splits, post-processor, decoder), the same named tokens and chat template, on
the real vocabularies here (SmolLM2, Gemma-3) and on written files that vary what real ones vary
(split names, BOS/EOS flags, control and user-defined tokens, tokens outside the byte alphabet,
missing named tokens, 100k+ vocabularies). A tokenizer it does not build goes to the converter."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.model import gguf_tokenizer
from engine.model.gguf_header import read_arrays
from engine.model.source import embedded_gguf

NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6
TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"


def _smollm2_vocab() -> tuple[list[str], list[int], list[str]]:
    _, arrays = read_arrays(Path(embedded_gguf()), gguf_tokenizer.ARRAYS)
    return (list(arrays["tokenizer.ggml.tokens"]), list(arrays["tokenizer.ggml.token_type"]),
            list(arrays["tokenizer.ggml.merges"]))


def _write(path: Path, arch: str, model: str, tokens: list[str], types: list[int], merges: list[str] | None,
           pre: str | None = None, ids: dict | None = None, flags: dict | None = None,
           template: str | None = TEMPLATE, scores: list[float] | None = None) -> Path:
    """A GGUF holding a tokenizer and the few config keys transformers reads (no tensors)."""
    import gguf
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in (("context_length", 2048), ("block_count", 1), ("embedding_length", 64),
                       ("feed_forward_length", 128), ("attention.head_count", 4),
                       ("attention.head_count_kv", 4), ("attention.layer_norm_rms_epsilon", 1e-6)):
        getattr(w, "add_uint32" if isinstance(value, int) else "add_float32")(f"{arch}.{key}", value)
    w.add_tokenizer_model(model)
    if pre:
        w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if merges is not None:
        w.add_token_merges(merges)
    if scores is not None:
        w.add_token_scores(scores)
    for key, value in (ids or {}).items():
        w.add_uint32(f"tokenizer.ggml.{key}", value)
    for key, value in (flags or {}).items():
        w.add_bool(f"tokenizer.ggml.{key}", value)
    if template:
        w.add_chat_template(template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _gemma_vocab() -> tuple[list[str], list[int]]:
    """A small sentencepiece vocabulary shaped like Gemma's: named tokens, byte tokens, "▁" words
    (every split of a word into two tokens is a merge), runs of spaces and of newlines."""
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
    types = [CONTROL] * len(tokens)
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [BYTE] * 256
    words = ["\u2581", "a", "b", "c", "d", "e", "h", "l", "o", "r", "t", "\u2581t", "he", "\u2581the", "lo",
             "hel", "hello", "\u2581hello", "or", "ld", "wor", "\u2581w", "\u2581world", "w", "\u2581a", "ab",
             "abc", "\u2581abc", "  ", "   ", "    "]
    tokens += words
    types += [NORMAL] * len(words)
    tokens += ["\n", "\n\n", "[multimodal]"]
    types += [USER_DEFINED] * 3
    return tokens, types


def _variants(tmp: Path) -> dict[str, Path]:
    tokens, types, merges = _smollm2_vocab()
    files = {"smollm2": Path(embedded_gguf())}
    # Qwen-like: qwen2 split, no BOS id, eos/pad the chat's end token, no add-BOS flag
    files["qwen2"] = _write(tmp / "qwen2.gguf", "qwen2", "gpt2", tokens, types, merges, pre="qwen2",
                            ids={"eos_token_id": 2, "padding_token_id": 0})
    # Llama-3-like: llama-bpe split, BOS added, no "<|endoftext|>" in the vocabulary, a control token
    # outside the byte alphabet, a user-defined "<think>", a token holding a space (respelled)
    t, k = list(tokens), list(types)
    t[0] = "<|begin_of_text|>"
    t += ["<\uff5cend\u2581of\u2581sentence\uff5c>", "<think>", "a b"]
    k += [CONTROL, USER_DEFINED, NORMAL]
    files["llama3"] = _write(tmp / "llama3.gguf", "llama", "gpt2", t, k, merges, pre="llama-bpe",
                             ids={"bos_token_id": 0, "eos_token_id": 2, "padding_token_id": 2},
                             flags={"add_bos_token": True, "add_eos_token": False})
    # Qwen3-like: GPT-2's own split, EOS added, 100k+ tokens (padding tokens), no unk
    big_t = tokens + [f"[PAD{i}]" for i in range(len(tokens), 100_100)]
    big_k = types + [USER_DEFINED] * (len(big_t) - len(types))
    files["qwen3"] = _write(tmp / "qwen3.gguf", "qwen3", "gpt2", big_t, big_k, merges, pre="default",
                            ids={"bos_token_id": 1, "eos_token_id": 2}, flags={"add_eos_token": True},
                            template=None)
    g_tokens, g_types = _gemma_vocab()
    files["gemma3"] = _write(tmp / "gemma3.gguf", "gemma3", "llama", g_tokens, g_types, None, pre="default",
                             ids={"bos_token_id": 2, "eos_token_id": 1, "unknown_token_id": 3, "padding_token_id": 0},
                             flags={"add_bos_token": True, "add_eos_token": False})
    # no "<mask>" (the class's default named token) and no add-BOS flag
    g_tokens = [t if t != "<mask>" else "<unused0>" for t in g_tokens]
    files["gemma3-nomask"] = _write(tmp / "gemma3b.gguf", "gemma3", "llama", g_tokens, g_types, None,
                                    ids={"bos_token_id": 2, "eos_token_id": 1, "unknown_token_id": 3})
    return files


def _files(folder: Path) -> tuple[dict, dict, str | None]:
    config = json.loads((folder / "tokenizer_config.json").read_text())
    template = folder / "chat_template.jinja"
    named = {k: config.get(k) for k in ("bos_token", "eos_token", "unk_token", "pad_token")}
    return (json.loads((folder / "tokenizer.json").read_text()), named,
            template.read_text() if template.is_file() else config.get("chat_template"))


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> dict[str, Path]:
    return _variants(tmp_path_factory.mktemp("tokenizers"))


@pytest.mark.parametrize("name", ["smollm2", "qwen2", "llama3", "qwen3", "gemma3", "gemma3-nomask"])
def test_the_built_tokenizer_is_the_one_transformers_converts(variants, name, tmp_path):
    path = variants[name]
    gguf_tokenizer.convert_with_transformers(path, tmp_path / "reference")
    tok, config = gguf_tokenizer.build(*gguf_tokenizer.read(path))
    gguf_tokenizer.write_files(tok, config, tmp_path / "built")
    reference, built = _files(tmp_path / "reference"), _files(tmp_path / "built")
    rows = len(gguf_tokenizer.read(path)[1]["tokenizer.ggml.tokens"])
    # the one difference: a named token the vocabulary lacks is not appended past the model's rows
    past = [t for t in reference[0]["added_tokens"] if t["id"] >= rows]
    assert [t["content"] for t in past] == (["<|endoftext|>"] if name == "llama3" else
                                            ["<mask>"] if name == "gemma3-nomask" else [])
    reference[0]["added_tokens"] = [t for t in reference[0]["added_tokens"] if t["id"] < rows]
    for key in reference[0]:
        assert built[0][key] == reference[0][key], key
    assert built[1:] == reference[1:]
    # and they encode text alike, named tokens and all; never an id past the model's rows
    from tokenizers import Tokenizer
    ref = Tokenizer.from_file(str(tmp_path / "reference" / "tokenizer.json"))
    text = "Hello  world <|im_start|>the abc\n\n <think> caf\u00e9 \U0001f600 123456 ab\tc"
    for special in (False, True):
        assert tok.encode(text, add_special_tokens=special).ids == ref.encode(text, add_special_tokens=special).ids
        assert max(tok.encode(text + "<|endoftext|><mask>", add_special_tokens=special).ids) < rows


def test_the_real_gemma_vocabulary_is_transformers_one(tmp_path):
    """Gemma-3-270M's 262,144 tokens (514,906 merges recovered from the vocabulary)."""
    from tests.engine.test_models import gemma_file
    path = gemma_file()
    gguf_tokenizer.convert_with_transformers(path, tmp_path / "reference")
    tok, config = gguf_tokenizer.build(*gguf_tokenizer.read(path))
    gguf_tokenizer.write_files(tok, config, tmp_path / "built")
    assert _files(tmp_path / "built") == _files(tmp_path / "reference")


def test_a_tokenizer_it_does_not_build_goes_to_transformers(tmp_path):
    """A Llama 2-style sentencepiece file (``llama`` tokenizer, ``llama`` architecture), and a
    byte-level one whose split is named but not known here (transformers' converter knows it)."""
    tokens, types = _gemma_vocab()
    tokens = ["<unk>", "<s>", "</s>", *tokens[7:]]
    types = [CONTROL] * 3 + types[7:]
    path = _write(tmp_path / "llama2.gguf", "llama", "llama", tokens, types, None,
                  ids={"bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0},
                  scores=[-float(i) for i in range(len(tokens))])
    tekken = _write(tmp_path / "tekken.gguf", "llama", "gpt2", *_smollm2_vocab(), pre="tekken",
                    ids={"bos_token_id": 1, "eos_token_id": 2})
    for file, bos in ((path, "<s>"), (tekken, "<|im_start|>")):
        with pytest.raises(gguf_tokenizer.NotCovered):
            gguf_tokenizer.build(*gguf_tokenizer.read(file))
        gguf_tokenizer.write(file, tmp_path / file.stem, file.name)
        assert _files(tmp_path / file.stem)[1]["bos_token"] == bos


def test_a_cut_vocabulary_is_one_line(tmp_path):
    whole = _write(tmp_path / "whole.gguf", "qwen2", "gpt2", *_smollm2_vocab(), pre="qwen2")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole.read_bytes()[:200_000])
    with pytest.raises(EngineError) as info:
        gguf_tokenizer.write(cut, tmp_path / "out", "cut.gguf")
    assert str(info.value).startswith("cut.gguf: cannot read the GGUF's tokenizer (") and "\n" not in str(info.value)
