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
    """The engine, remembering the prompt ids and the options of each request the app makes (the
    assistant's own: DRY penalties, the answer kept for the next turn; an engine run on the ids
    alone, greedy with no penalty, drafted loops a DRY answer does not have: hexa's ratio read
    0.68-0.79x with nothing drawn at all)."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.prompts, self.options = engine, [], []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def generate(self, prompt, **kwargs):
        self.prompts.append(list(prompt))
        self.options.append({k: v for k, v in kwargs.items() if k != "cancel"})
        return self.engine.generate(prompt, **kwargs)

    def index_response(self, token_ids) -> None:
        """Not kept: the engine's own run that follows would draft the very same answer from it."""

    def close(self) -> None:
        """Kept open: the benchmark runs every prompt on it, and closes it at the end itself."""


@dataclass
class Pair:
    prompt_tokens: int
    app_tokens: int
    app_decode_tok_s: float
    engine_tokens: int
    engine_decode_tok_s: float
    child_tokens: int = 0               # the app with its engine in a child process (0: not measured)
    child_decode_tok_s: float = 0.0
    child_alone_decode_tok_s: float = 0.0   # that process's engine alone (through HTTP, no app)

    @property
    def ratio(self) -> float:
        return self.app_decode_tok_s / self.engine_decode_tok_s if self.engine_decode_tok_s else 0.0

    @property
    def child_ratio(self) -> float:
        return self.child_decode_tok_s / self.engine_decode_tok_s if self.engine_decode_tok_s else 0.0


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


def measure(engine: Any, text: str, method: str, max_tokens: int, engine_first: bool = False,
            child: Any = None) -> Pair:
    """One prompt through the app and through the engine alone, on the same ids and method;
    ``child`` (a ``ChildEngine``): through the app with that engine process too."""
    from agents.assistant import request_options

    settings = Settings(method=method, max_tokens=max_tokens, retrieval=False, history_drafting=False)
    recording = Recording(engine)

    def alone(ids: list[int], source: Any = engine, options: dict | None = None):
        """The engine on ``ids`` with the options the app's request had (before the app has run:
        the assistant's, as the app will send them)."""
        done = None
        for event in source.generate(ids, **(options or request_options(settings, max_tokens, []))):
            done = event
        return done

    def in_app(runner: Recording):
        with tempfile.TemporaryDirectory(prefix="hexa-bench-app-") as root:
            return asyncio.run(_in_app(runner, text, settings, Path(root)))

    first_ids = engine.chat_ids(_messages(text))           # what the app will send (no retrieval)
    first = alone(first_ids) if engine_first else None
    app_done = in_app(recording)
    ids, options = recording.prompts[-1], recording.options[-1]
    if options != request_options(settings, max_tokens, []):
        first = None                                       # not what the app sent: run it again
    child_done = in_app(Recording(child)) if child is not None else None
    done = first if first is not None and first_ids == ids else alone(ids, options=options)
    child_alone = alone(ids, child, options) if child is not None else None
    return Pair(len(ids), app_done.new_tokens, app_done.decode_tok_s, done.new_tokens, done.decode_tok_s,
                child_done.new_tokens if child_done else 0, child_done.decode_tok_s if child_done else 0.0,
                child_alone.decode_tok_s if child_alone else 0.0)


def _messages(text: str) -> list[dict]:
    from agents.prompts import load
    return [{"role": "system", "content": load("assistant_system")}, {"role": "user", "content": text}]


def run(engine: Any, cases: list, methods: list[str], max_tokens: int, log, child: Any = None) -> list[dict]:
    """Every case's first message with every method, app and engine alternating who goes first
    (``child``: the app with its engine in that process as well, between the two)."""
    rows = []
    for k, case in enumerate(cases):
        for j, method in enumerate(methods):
            pair = measure(engine, case.prompt, method, max_tokens, engine_first=(k + j) % 2 == 1, child=child)
            rows.append({"id": case.id, "task": case.task, "method": method, **pair.__dict__,
                         "ratio": pair.ratio, "child_ratio": pair.child_ratio})
            extra = (f"  app (child) {pair.child_decode_tok_s:6.1f} tok/s {pair.child_ratio:.2f}x"
                     f"  child alone {pair.child_alone_decode_tok_s:6.1f} tok/s" if child is not None else "")
            print(f"[{len(rows)}/{len(cases) * len(methods)}] {case.task:<8} {case.id:<14} {method:<10} "
                  f"app {pair.app_decode_tok_s:6.1f} tok/s  engine {pair.engine_decode_tok_s:6.1f} tok/s  "
                  f"{pair.ratio:.2f}x{extra}", file=log, flush=True)
    return rows


def _rate(rows: list[dict], tokens: str, speed: str) -> float:
    """Tokens over decoding time across rows (not a mean of rates)."""
    mine = [r for r in rows if r[tokens] and r[speed]]
    return sum(r[tokens] for r in mine) / sum(r[tokens] / r[speed] for r in mine) if mine else 0.0


def format_table(rows: list[dict]) -> str:
    child = any(r.get("child_tokens") for r in rows)
    head = f"{'method':<10} {'n':>3} {'app decode tok/s':>17} {'engine decode tok/s':>20} {'app / engine':>13}"
    if child:
        head += f" {'app (child) tok/s':>18} {'child / engine':>15} {'child alone tok/s':>18} {'app / alone':>12}"
    lines = [head, "-" * len(head)]
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        app = _rate(mine, "app_tokens", "app_decode_tok_s")
        alone = _rate(mine, "engine_tokens", "engine_decode_tok_s")
        line = f"{method:<10} {len(mine):>3} {app:>17.1f} {alone:>20.1f} {app / alone:>12.2f}x"
        if child:
            remote = _rate(mine, "child_tokens", "child_decode_tok_s")
            by_http = _rate(mine, "child_tokens", "child_alone_decode_tok_s")
            line += f" {remote:>18.1f} {remote / alone:>14.2f}x {by_http:>18.1f} {remote / by_http:>11.2f}x"
        lines.append(line)
    return "\n".join(lines)
