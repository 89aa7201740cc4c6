"""How fast the app generates compared with the engine alone, on the same prompt ids.

The app runs headless (Textual's ``run_test``: the same widgets, frames and worker threads as on a
terminal, without the terminal): a message is sent in the assistant, its prompt ids are recorded,
and the engine then generates from exactly those ids with nothing else running. The two are
interleaved per prompt so that a machine's drift hits both alike. Used by ``hexa bench --app``.
"""
from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.locations import Locations
from app.settings import Loaded, Settings

SIZE = (120, 36)


class Recording:
    """The engine, remembering the prompt ids of each request the app makes."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.prompts = engine, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def generate(self, prompt, **kwargs):
        self.prompts.append(list(prompt))
        return self.engine.generate(prompt, **kwargs)

    def index_response(self, token_ids) -> None:
        """Not kept: the engine's own run that follows would draft the very same answer from it."""


@dataclass
class Pair:
    prompt_tokens: int
    app_tokens: int
    app_decode_tok_s: float
    engine_tokens: int
    engine_decode_tok_s: float

    @property
    def ratio(self) -> float:
        return self.app_decode_tok_s / self.engine_decode_tok_s if self.engine_decode_tok_s else 0.0


async def _in_app(engine: Recording, text: str, settings: Settings, root: Path):
    from .app import HexaApp
    from .widgets.composer import Composer

    locs = Locations(root / "config", root / "data", root / "cache", root / "logs")
    app = HexaApp(Loaded(settings, locs.config_file), locs, engine_factory=lambda s, l, p: engine)
    async with app.run_test(size=SIZE) as pilot:
        # plain sleeps, not pilot.pause: the pilot's polling alone took 10% of a core
        while app.runtime is None or not app.memory_warm.is_set():   # as a user would: once loaded
            await asyncio.sleep(0.05)
        await pilot.pause()
        screen = app.screen
        composer = screen.query_one(Composer)
        composer.post_message(Composer.Submitted(composer, text))     # as a paste and Enter would
        while screen.request == 0 or screen.active is not None or screen.jobs or screen.inbox:
            await asyncio.sleep(0.05)
        done = screen.metrics.done
    if done is None:
        raise RuntimeError("the app finished without an answer")
    return done


def measure(engine: Any, text: str, method: str, max_tokens: int, engine_first: bool = False) -> Pair:
    """One prompt through the app and through the engine alone, on the same ids and method."""
    settings = Settings(method=method, max_tokens=max_tokens, retrieval=False, history_drafting=False)
    recording = Recording(engine)

    def alone(ids: list[int]):
        done = None
        for event in engine.generate(ids, max_new_tokens=max_tokens, method=method):
            done = event
        return done

    first_ids = engine.chat_ids(_messages(text))           # what the app will send (no retrieval)
    first = alone(first_ids) if engine_first else None
    with tempfile.TemporaryDirectory(prefix="hexa-bench-app-") as root:
        app_done = asyncio.run(_in_app(recording, text, settings, Path(root)))
    ids = recording.prompts[-1]
    done = first if first is not None and first_ids == ids else alone(ids)
    return Pair(len(ids), app_done.new_tokens, app_done.decode_tok_s, done.new_tokens, done.decode_tok_s)


def _messages(text: str) -> list[dict]:
    from agents.prompts import load
    return [{"role": "system", "content": load("assistant_system")}, {"role": "user", "content": text}]


def run(engine: Any, cases: list, methods: list[str], max_tokens: int, log) -> list[dict]:
    """Every case's first message with every method, app and engine alternating who goes first."""
    rows = []
    for k, case in enumerate(cases):
        for j, method in enumerate(methods):
            pair = measure(engine, case.prompt, method, max_tokens, engine_first=(k + j) % 2 == 1)
            rows.append({"id": case.id, "task": case.task, "method": method, **pair.__dict__,
                         "ratio": pair.ratio})
            print(f"[{len(rows)}/{len(cases) * len(methods)}] {case.task:<8} {case.id:<14} {method:<10} "
                  f"app {pair.app_decode_tok_s:6.1f} tok/s  engine {pair.engine_decode_tok_s:6.1f} tok/s  "
                  f"{pair.ratio:.2f}x", file=log, flush=True)
    return rows


def format_table(rows: list[dict]) -> str:
    lines = [f"{'method':<10} {'n':>3} {'app decode tok/s':>17} {'engine decode tok/s':>20} {'app / engine':>13}",
             "-" * 67]
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        app = sum(r["app_tokens"] for r in mine) / sum(r["app_tokens"] / r["app_decode_tok_s"] for r in mine)
        alone = sum(r["engine_tokens"] for r in mine) / sum(r["engine_tokens"] / r["engine_decode_tok_s"] for r in mine)
        lines.append(f"{method:<10} {len(mine):>3} {app:>17.1f} {alone:>20.1f} {app / alone:>12.2f}x")
    return "\n".join(lines)
