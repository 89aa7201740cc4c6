"""The requests ``hexa serve`` accepts, as the OpenAI API defines them (the part hexa implements).

Validation is strict (a string where a number belongs is refused, not coerced) and unknown fields
are ignored, as OpenAI-compatible servers do: clients send fields of newer API versions. Fields
that would change the answer's meaning and that hexa cannot honour (``n`` > 1, ``logprobs``,
``echo``, tools, images) are refused with a 400 rather than silently dropped.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = ["ChatRequest", "CompletionRequest", "HexaOptions", "ValidationError", "first_problem"]


class FreeText(BaseModel):
    """A grammar's free-text segment (``engine.decoding.grammar.Free``)."""
    model_config = ConfigDict(extra="forbid", strict=True)
    free: int = Field(ge=1, le=4096)              # at most this many characters
    exclude: str = '"\n'                          # none of these


class HexaOptions(BaseModel):
    """hexa's own request options (the ``hexa`` field; an OpenAI client sends it as ``extra_body``)."""
    model_config = ConfigDict(extra="forbid", strict=True)
    method: str | None = None                     # decoding method (default: the server's setting)
    sources: list[list[int]] = Field(default_factory=list, max_length=64)   # drafting sources, token ids
    keep_answer: bool | None = None               # keep prompt + answer's KV (default: chat yes, completions no)
    reuse: bool = True                            # serve the prompt's start from a kept prefix's KV
    index: bool | None = None                     # keep the answer as a drafting source (default: the setting)
    request_id: str | None = Field(None, max_length=100)   # the client's name for it: POST /hexa/cancel/{id}
    # the answer must be one of these alternatives (strings and free-text segments): constrained decoding
    grammar: list[list[str | FreeText]] | None = Field(None, min_length=1, max_length=512)
    penalize_prompt: bool = True                  # the penalties count the prompt too (docs/sampling.md)
    # the prompt's last ``continues`` ids are this model's answer so far (one handed over mid-way by
    # a router): fed as decoding fed them, so the answer goes on as it would have (docs/serve.md)
    continues: int = Field(0, ge=0)


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    type: Literal["text"]
    text: str


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    include_usage: bool = False


class Common(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    model: str
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = None
    # repetition penalties and truncation: OpenAI's two, then llama.cpp server's names (docs/sampling.md);
    # unset: off. Accepted as numbers given as ints too (JSON has one number type)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    repeat_penalty: float | None = Field(None, gt=0, le=10)
    repeat_last_n: int | None = Field(None, ge=-1)
    dry_multiplier: float | None = Field(None, ge=0, le=100)
    dry_base: float | None = Field(None, ge=1, le=100)
    dry_allowed_length: int | None = Field(None, ge=1)
    dry_penalty_last_n: int | None = Field(None, ge=-1)
    top_k: int | None = Field(None, ge=0)
    min_p: float | None = Field(None, ge=0, lt=1)
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(1, ge=1, le=1)                 # one answer per request (the device decodes one)
    logprobs: None | Literal[False, 0] = None     # not computed
    hexa: HexaOptions = Field(default_factory=HexaOptions)

    @model_validator(mode="after")
    def _stops(self):
        stops = self.stops()
        if len(stops) > 4:
            raise ValueError("stop: at most 4 stop sequences")
        return self

    def stops(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)


class ChatRequest(Common):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    tools: None | list[object] = Field(None, max_length=0)   # no tool calling: an empty list is harmless

    def wanted_tokens(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


class CompletionRequest(Common):
    # text, or token ids; a batch of one is accepted as the API allows lists
    prompt: str | list[int] | list[str] | list[list[int]]
    echo: Literal[False] = False
    suffix: None | Literal[""] = None
    best_of: int | None = Field(None, ge=1, le=1)

    def wanted_tokens(self) -> int | None:
        return self.max_tokens

    def single(self) -> str | list[int]:
        """The one prompt (text or ids); ValueError for an empty one or a batch of several."""
        p = self.prompt
        if isinstance(p, list) and p and isinstance(p[0], (str, list)):
            if len(p) != 1:
                raise ValueError("prompt: one prompt per request (a batch of several is not served)")
            p = p[0]
        if not p:
            raise ValueError("prompt: empty")
        return p


TYPE_TAGS = {"str", "int", "float", "bool", "none", "TextPart"}


def first_problem(exc: ValidationError) -> tuple[str, str | None]:
    """(one-line message, the parameter at fault) for a request that failed validation."""
    err = exc.errors()[0]
    # a union's branch names (``str``, ``list[int]``, ``function-after[...]``) are not parameters
    where = [str(x) for x in err.get("loc", ()) if "[" not in str(x) and x not in TYPE_TAGS]
    param = ".".join(where) or None
    message = err.get("msg", "invalid request")
    if message.startswith("Value error, "):
        return message[len("Value error, "):], param
    return (f"{param}: {message}" if param else message), param
