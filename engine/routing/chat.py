"""A prompt's chat messages, recovered from its token ids, for servers that speak only chat
completions (OpenAI's and most cloud APIs take messages, never a raw prompt).

The router sees what the engine sees: token ids built by the device's chat template. So the
template is rendered once with marker contents, and the text around each marker is learned as
that position's frame (before the system prompt, after it, before an answer, before the next
question, the generation prompt at the end). A prompt is cut back into messages along those
frames and accepted only if the messages, put through the same template, give exactly the same
ids: what the server is sent is then exactly the conversation the device would have answered.
A prompt that ends inside an answer (the assistant's "continue") has no chat form: the device
serves it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..model.tokenizer import TokenText

_S, _U1, _A1, _U2 = "@@hexa-s@@", "@@hexa-u1@@", "@@hexa-a1@@", "@@hexa-u2@@"


@dataclass(frozen=True)
class ChatFrames:
    head_user: str                 # the text before the first question, when there is no system prompt
    to_assistant: str              # between a question and its answer
    to_user: str                   # between an answer and the next question
    tail: str                      # after the last question: the generation prompt
    head_system: str | None = None     # before the system prompt (None: the template takes none)
    after_system: str | None = None    # between the system prompt and the first question

    @classmethod
    def learn(cls, tokenizer) -> "ChatFrames | None":
        """The frames of ``tokenizer``'s chat template; None when it has none or they cannot be
        told apart (the device then serves every request itself)."""
        if not getattr(tokenizer, "chat_template", None):
            return None
        chat = TokenText(tokenizer)
        turns = [{"role": "user", "content": _U1}, {"role": "assistant", "content": _A1},
                 {"role": "user", "content": _U2}]
        try:
            plain = chat.chat_text(turns)
        except Exception:
            return None
        at = [plain.find(m) for m in (_U1, _A1, _U2)]
        if min(at) < 0 or at != sorted(at):
            return None
        frames = dict(head_user=plain[:at[0]], to_assistant=plain[at[0] + len(_U1):at[1]],
                      to_user=plain[at[1] + len(_A1):at[2]], tail=plain[at[2] + len(_U2):])
        if not frames["to_assistant"] or not frames["to_user"] or not frames["tail"]:
            return None
        try:
            full = chat.chat_text([{"role": "system", "content": _S}] + turns)
            s, u1 = full.find(_S), full.find(_U1)
            if 0 <= s < u1:
                frames |= dict(head_system=full[:s], after_system=full[s + len(_S):u1])
        except Exception:                                       # a template without a system role
            pass
        return cls(**frames)

    def split(self, text: str) -> list[list[dict]]:
        """Every reading of ``text`` as messages along the frames: without a system prompt first
        (a template's default one, e.g. "You are SmolLM...", is then left to the server), then
        with one; the caller keeps the first that gives the same ids back."""
        readings = []
        if text.startswith(self.head_user):
            rest = self._turns(text, len(self.head_user))
            if rest is not None:
                readings.append(rest)
        if self.head_system is not None and self.after_system and text.startswith(self.head_system):
            start = len(self.head_system)
            cut = text.find(self.after_system, start)
            if cut >= 0:
                rest = self._turns(text, cut + len(self.after_system))
                if rest is not None:
                    readings.append([{"role": "system", "content": text[start:cut]}] + rest)
        return readings

    def _turns(self, text: str, pos: int) -> list[dict] | None:
        """Questions and answers from ``pos`` on; None unless the text ends with a question
        followed by the generation prompt."""
        out: list[dict] = []
        end = len(text) - len(self.tail) if text.endswith(self.tail) else -1
        while True:
            nxt = text.find(self.to_assistant, pos)
            if end >= pos and (nxt < 0 or nxt >= end):
                out.append({"role": "user", "content": text[pos:end]})
                return out
            if nxt < 0:
                return None
            out.append({"role": "user", "content": text[pos:nxt]})
            pos = nxt + len(self.to_assistant)
            back = text.find(self.to_user, pos)
            if back < 0:
                return None                                     # it ends inside an answer
            out.append({"role": "assistant", "content": text[pos:back]})
            pos = back + len(self.to_user)


def chat_messages(tokenizer, frames: ChatFrames | None, ids: Sequence[int]) -> list[dict] | None:
    """The messages whose chat prompt is exactly ``ids``; None when there are none."""
    if frames is None:
        return None
    text = tokenizer.decode(list(ids), skip_special_tokens=False)
    chat = TokenText(tokenizer)
    for messages in frames.split(text):
        try:
            if chat.chat_ids(messages) == list(ids):
                return messages
        except Exception:
            continue
    return None
