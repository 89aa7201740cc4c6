"""``hexa agent-bench``: UI-agent tasks on the virtual phone, each checked on the phone's state.

Every run starts from a fresh phone (``hexa-phone reset``); its success is the task's check on
the state afterwards, never the agent's word. Attempt 1 of every task runs before attempt 2 of
any, so later attempts find the earlier episodes in the trajectory memory (a temporary one unless
``--memory`` says to use the user's).
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from . import settings as config

TASK_DIR = Path(__file__).resolve().parent.parent / "assets" / "phone" / "tasks"
DEFAULT_TASKS = ("settings.jsonl", "clock.jsonl")


def register(sub) -> None:
    p = sub.add_parser("agent-bench", help="UI-agent tasks on the virtual phone, checked on its state")
    p.add_argument("--tasks", type=Path, action="append", default=None, metavar="FILE",
                   help="JSONL of {app, instruction, check} (repeatable; default: the shipped "
                        "Settings and Clock tasks)")
    p.add_argument("--repeat", type=int, default=1, help="attempts per task (default 1)")
    p.add_argument("--limit", type=int, default=None, help="first N tasks only")
    p.add_argument("--memory", action="store_true",
                   help="keep the episodes in the user's memory (default: a temporary one)")
    p.add_argument("--json", type=Path, default=None, help="write every run here")
    config.add_flags(p.add_argument_group("device"), config.AGENT_FLAGS, top_level=False)
    config.add_flags(p.add_argument_group("model"), config.MODEL_FLAGS, top_level=False)
    p.set_defaults(func=cmd_agent_bench, uses_settings=True)


def cmd_agent_bench(args) -> int:
    from agents.common import AgentError
    from agents.phone.checks import load_tasks

    if args.repeat < 1 or (args.limit is not None and args.limit < 1):
        raise AgentError("--repeat and --limit must be at least 1")
    files = args.tasks or [TASK_DIR / name for name in DEFAULT_TASKS]
    tasks = [t for f in files for t in load_tasks(f)][:args.limit]
    if not tasks:
        raise AgentError("no tasks to run")
    from .cli_agent import connect
    from .loading import load_engine, open_memory, open_temporary_memory

    s = args.loaded.settings
    device = connect(s, args.locations)
    if device.virtual_state() is None:
        raise AgentError(f"{s.device} is not hexa's virtual phone: agent-bench checks tasks on the "
                         f"phone's state (start one with `hexa phone serve`)")
    engine = load_engine(s, args.locations)
    if args.memory:
        memory, folder = open_memory(args.locations, tokenizer=engine.encode), None
    else:
        memory, folder = open_temporary_memory(tokenizer=engine.encode)
    try:
        runs = run_all(engine, memory, s, device, tasks, args.repeat)
    finally:
        memory.close()
        device.close()
        if folder is not None:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    print(format_table(runs, args.repeat))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    return 0


def run_all(engine, memory, settings, device, tasks, repeat: int) -> list[dict]:
    from agents.events import Acted, EpisodeEnd
    from agents.phone.checks import check
    from agents.ui.agent import UIAgent
    from engine import Done

    agent = UIAgent(engine, memory, settings, device, confirm=lambda q: True)
    runs = []
    for attempt in range(1, repeat + 1):
        for n, task in enumerate(tasks, 1):
            device.reset_virtual(task.setup)
            t0 = time.perf_counter()
            dones, actions, end = [], [], None
            for ev in agent.run(task.instruction,
                                check_state=lambda t=task: check(t.check, device.virtual_state())):
                if isinstance(ev, Done):
                    dones.append(ev)
                elif isinstance(ev, Acted):
                    actions.append(ev.action)
                elif isinstance(ev, EpisodeEnd):
                    end = ev
            steps = sum(d.steps for d in dones)
            new = sum(d.new_tokens for d in dones)
            run = {"attempt": attempt, "app": task.app, "instruction": task.instruction,
                   "success": bool(end.success), "outcome": end.outcome, "steps": end.steps,
                   "actions": actions, "invalid": 1 if end.outcome == "error" else 0,
                   "accepted_per_step": new / steps if steps else 0.0,
                   "ms_per_token": statistics.fmean(d.ms_per_token for d in dones) if dones else 0.0,
                   "seconds": time.perf_counter() - t0, "message": end.message}
            runs.append(run)
            mark = "ok " if run["success"] else "FAIL"
            print(f"[{attempt}/{repeat} {n}/{len(tasks)}] {mark} {task.instruction[:60]:<60} "
                  f"{run['outcome']:<10} {run['steps']:>2} steps  {' '.join(actions)[:70]}",
                  file=sys.stderr, flush=True)
    return runs


def format_table(runs: list[dict], repeat: int) -> str:
    def row(name: str, rs: list[dict]) -> str:
        if not rs:
            return f"| {name} | – | – | – | – | – | – |"
        ok = sum(r["success"] for r in rs)
        return (f"| {name} | {len(rs)} | {ok / len(rs):.0%} ({ok}) | "
                f"{statistics.fmean(r['steps'] for r in rs):.1f} | {sum(r['invalid'] for r in rs)} | "
                f"{statistics.fmean(r['accepted_per_step'] for r in rs):.2f} | "
                f"{statistics.fmean(r['ms_per_token'] for r in rs):.1f} |")

    lines = ["| runs | n | success | steps | invalid actions | accepted tok/step | ms/token |",
             "|---|---|---|---|---|---|---|"]
    for app in sorted({r["app"] for r in runs}):
        lines.append(row(f"{app}, attempt 1", [r for r in runs if r["app"] == app and r["attempt"] == 1]))
        if repeat > 1:
            lines.append(row(f"{app}, attempts 2+", [r for r in runs if r["app"] == app and r["attempt"] > 1]))
    lines.append(row("all, attempt 1", [r for r in runs if r["attempt"] == 1]))
    if repeat > 1:
        lines.append(row("all, attempts 2+", [r for r in runs if r["attempt"] > 1]))
    return "\n".join(lines)
