"""The model's part: choose among the planner's few candidate steps, each shown with its
consequence, by one constrained letter (so a 135M model cannot write anything else, and
speculative decoding stays lossless with respect to constrained greedy decoding).

Only close calls go to the model: when the planner's best step leads the next by a clear margin,
asking would only add latency. The options are listed in the planner's order.
"""
from __future__ import annotations

import threading
from typing import Iterator, Protocol, Sequence

from engine.events import Done

from .. import prompts
from .planner import Step

LETTERS = "ABCD"
CLOSE = 0.5                 # the planner's best leads by less than this: ask the model
MAX_TOKENS = 4


class Engine(Protocol):
    """What the chooser needs of the engine (``engine.Engine``)."""
    model_name: str
    context_window: int

    def chat_ids(self, messages: list[dict]) -> list[int]: ...

    def constraint(self, grammar): ...

    def generate(self, prompt, **kw) -> Iterator: ...


def options_text(task: str, where: str, steps: Sequence[Step]) -> str:
    lines = [f"Task: {task}", f"Screen: {where}", "Next step options:"]
    lines += [f"{LETTERS[i]}. {describe(s)}" for i, s in enumerate(steps)]
    lines.append("Answer with the letter of the option that gets the task done.")
    return "\n".join(lines)


def describe(step: Step) -> str:
    return step.why or step.action


class ModelChooser:
    def __init__(self, engine: Engine, method: str = "hexa", sources: Sequence[Sequence[int]] = ()):
        self.engine, self.method, self.sources = engine, method, list(sources)
        self._constraints: dict[int, object] = {}

    def close_call(self, steps: Sequence[Step]) -> bool:
        return len(steps) > 1 and steps[0].score - steps[1].score < CLOSE

    def choose(self, task: str, where: str, steps: Sequence[Step],
               cancel: threading.Event | None = None) -> Iterator:
        """Events of the engine; returns (index chosen, Done) — index 0 when cancelled."""
        from engine.decoding.grammar import Grammar

        steps = list(steps)[:len(LETTERS)]
        n = len(steps)
        if n not in self._constraints:
            self._constraints[n] = self.engine.constraint(Grammar([[LETTERS[i]] for i in range(n)]))
        messages = [{"role": "system", "content": prompts.load("ui_agent_system")},
                    {"role": "user", "content": options_text(task, where, steps)}]
        ids = self.engine.chat_ids(messages)
        done = None
        for event in self.engine.generate(ids, max_new_tokens=MAX_TOKENS, method=self.method,
                                          sources=self.sources, cancel=cancel,
                                          constraint=self._constraints[n]):
            if isinstance(event, Done):
                done = event
            yield event
        letter = (done.text.strip()[:1] if done is not None else "") or "A"
        return (LETTERS.index(letter) if letter in LETTERS[:n] else 0), done
