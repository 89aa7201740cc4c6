"""Benchmark prompts: the Spec-Bench-style JSONL format (``{"id", "task", "turns": [...]}``)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError


@dataclass(frozen=True)
class Case:
    id: str
    task: str
    prompt: str                  # the first user turn
    turns: tuple[str, ...] = ()  # every user turn in order (the first is ``prompt``); () means (prompt,)

    def __post_init__(self):
        if not self.turns:
            object.__setattr__(self, "turns", (self.prompt,))


def load_cases(path: Path, tasks: list[str] | None = None, n: int | None = None) -> list[Case]:
    """Read the file; keep ``tasks`` (all if None) and the first ``n`` cases of each, in file order."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineError(f"cannot read benchmark data {path}: {exc.__class__.__name__}") from None
    cases: list[Case] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            turns = tuple(str(t) for t in obj["turns"])
            case = Case(str(obj["id"]), str(obj["task"]), turns[0], turns)
        except (ValueError, KeyError, IndexError, TypeError):
            raise EngineError(f"{path}:{no}: not a benchmark case (need id, task, turns)") from None
        cases.append(case)
    available = sorted({c.task for c in cases})
    if tasks:
        unknown = [t for t in tasks if t not in available]
        if unknown:
            raise EngineError(f"unknown task(s) {', '.join(unknown)} in {path} (has: {', '.join(available)})")
        cases = [c for c in cases if c.task in tasks]
    if n is not None:
        seen: dict[str, int] = {}
        kept = []
        for c in cases:
            seen[c.task] = seen.get(c.task, 0) + 1
            if seen[c.task] <= n:
                kept.append(c)
        cases = kept
    if not cases:
        raise EngineError(f"no benchmark cases selected from {path}")
    return cases


def prompt_ids(engine, case: Case, max_prompt_tokens: int) -> list[int]:
    """Chat-templated first turn, the user text cut (at its end) so the whole prompt fits."""
    return conversation_ids(engine, [], case.prompt, max_prompt_tokens)


def conversation_ids(engine, earlier: list[dict], user: str, max_prompt_tokens: int) -> list[int]:
    """Chat-templated ``earlier`` messages then the ``user`` turn; the new user text is cut (at its
    end) so the whole prompt fits (the earlier messages are kept whole)."""
    ids = engine.chat_ids(earlier + [{"role": "user", "content": user}])
    if len(ids) <= max_prompt_tokens:
        return ids
    content = engine.encode(user)
    overhead = len(ids) - len(content)
    text = engine.decode(content[:max(1, max_prompt_tokens - overhead - 8)])
    ids = engine.chat_ids(earlier + [{"role": "user", "content": text}])
    return ids[:max_prompt_tokens] if len(ids) > max_prompt_tokens else ids
