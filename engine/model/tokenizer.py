"""A light tokenizer over a cached model folder: the ``tokenizers`` library plus the chat template.

transformers' AutoTokenizer costs seconds to import and load; this reads the same files
(``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja``) in a fraction of that and
renders the chat template the way transformers does (sandboxed Jinja, trim/lstrip blocks).
"""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Sequence

from tokenizers import Tokenizer


def _token_text(value) -> str | None:
    if isinstance(value, dict):
        return value.get("content")
    return value


class ChatTokenizer:
    def __init__(self, folder: Path):
        folder = Path(folder)
        self.backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
        config_file = folder / "tokenizer_config.json"
        config = json.loads(config_file.read_text()) if config_file.is_file() else {}
        self.bos_token = _token_text(config.get("bos_token"))
        self.eos_token = _token_text(config.get("eos_token"))
        self.unk_token = _token_text(config.get("unk_token"))
        self.pad_token = _token_text(config.get("pad_token"))
        template_file = folder / "chat_template.jinja"
        template = template_file.read_text() if template_file.is_file() else config.get("chat_template")
        if isinstance(template, list):  # named templates: use the default one
            template = next((t["template"] for t in template if t.get("name") == "default"), None)
        self.chat_template: str | None = template
        self._compiled = None
        self.unk_token_id = self.convert_tokens_to_ids(self.unk_token) if self.unk_token else None
        self.eos_token_id = self.convert_tokens_to_ids(self.eos_token) if self.eos_token else None
        self._special = {t.content for t in self.backend.get_added_tokens_decoder().values() if t.special}

    def __len__(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def convert_tokens_to_ids(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self.backend.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def render_chat(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        if self._compiled is None:
            from jinja2.ext import loopcontrols
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            def raise_exception(message):
                raise ValueError(f"chat template: {message}")

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
            env.filters["tojson"] = lambda x, indent=None, **_: json.dumps(x, ensure_ascii=False, indent=indent)
            env.globals["raise_exception"] = raise_exception
            env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
            self._compiled = env.from_string(self.chat_template)
        return self._compiled.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                     bos_token=self.bos_token or "", eos_token=self.eos_token or "",
                                     unk_token=self.unk_token or "", pad_token=self.pad_token or "")

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
        return self.encode(self.render_chat(messages, add_generation_prompt))


class TokenText:
    """Text <-> token ids and a chat's prompt ids over any tokenizer with transformers' interface
    (``ChatTokenizer`` or transformers' own): the engine's ``encode``/``decode``/``chat_ids``, and
    the same for a client of ``hexa serve``, which must not import torch."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def chat_text(self, messages: list[dict]) -> str:
        """The chat template applied to ``messages``, as text (the prompt ``chat_ids`` encodes)."""
        if hasattr(self.tokenizer, "render_chat"):            # ChatTokenizer
            return self.tokenizer.render_chat(messages, add_generation_prompt=True)
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def chat_ids(self, messages: list[dict]) -> list[int]:
        from ..errors import EngineError

        if not self.tokenizer.chat_template:
            return self.encode("\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\nassistant:")
        try:
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        except Exception as exc:  # a template that rejects these messages (e.g. roles out of order)
            raise EngineError(f"the model's chat template rejected the messages: {exc}") from None
