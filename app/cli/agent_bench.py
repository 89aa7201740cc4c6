"""``hexa agent-bench``: UI-agent tasks on the virtual phone, each judged by the harness on the
phone's state (``agents.harness``), never by the agent's word.

First every app the tasks involve is explored into the bench's memory (a temporary one unless
``--memory``), and what that cost is reported. Then the tasks run: one configuration of the agent
(``--policy``, ``--no-verify``, ``--no-recall``), or with ``--ladder`` every rung of
``agent_bench_runs.RUNGS``, each from its own copy of the freshly explored memory so that no rung
learns from another. Attempt 1 of every task runs before attempt 2 of any.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from .. import settings as config
from .agent_bench_runs import RUNGS, BenchTask, Rung

POLICIES = ("top", "planner", "model")
EXPLORE_BUDGET = 2000


def register(sub) -> None:
    p = sub.add_parser("agent-bench", help="UI-agent tasks on the virtual phone, checked on its state",
                       description="Explore the tasks' apps, then run each task on hexa's virtual phone "
                                   "from its start state and judge it by a check on the phone's state. "
                                   "Prints a table per configuration and app; --json writes every run.")
    p.add_argument("--tasks", type=Path, action="append", default=None, metavar="FILE",
                   help="JSONL of {id, app, instruction, setup, check} (repeatable; default: every "
                        "shipped task file)")
    p.add_argument("--apps", default=None, metavar="APP,...", help="only these apps' tasks (settings,clock,...)")
    p.add_argument("--ids", default=None, metavar="ID,...", help="only these task ids")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="the first N tasks only")
    p.add_argument("--variants", type=int, default=0, metavar="K",
                   help="add K freshly drawn variants of each app's task templates")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="the variants' seed (default 0: the same tasks each run)")
    p.add_argument("--only-variants", action="store_true", help="run the drawn variants only")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="attempts per task (default 1; the ladder's repeats rung makes at least 2)")
    p.add_argument("--explore-budget", type=int, default=EXPLORE_BUDGET, metavar="N",
                   help=f"actions per app explored before the runs (default {EXPLORE_BUDGET}; 0: none)")
    p.add_argument("--memory", action="store_true",
                   help="explore into your memory and run there (default: a temporary one; with "
                        "--ladder the rungs run on copies of it)")
    p.add_argument("--ladder", action="store_true",
                   help="run every configuration on the same tasks: " + ", ".join(RUNGS))
    p.add_argument("--rungs", default=None, metavar="RUNG,...", help="with --ladder: only these rungs")
    p.add_argument("--policy", choices=POLICIES, default=None,
                   help="top (tap the best-ranked element), planner (default), or model")
    p.add_argument("--no-verify", action="store_true", help="do not check each step's effect")
    p.add_argument("--no-recall", action="store_true", help="do not replay what worked before")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="write every run here")
    config.add_flags(p.add_argument_group("device"), config.AGENT_FLAGS, top_level=False)
    config.add_flags(p.add_argument_group("model"), config.MODEL_FLAGS, top_level=False)
    p.set_defaults(func=cmd_agent_bench, uses_settings=True)


def _words(text: str | None) -> list[str]:
    return [w.strip() for w in (text or "").split(",") if w.strip()]


def plan_rungs(args) -> list[Rung]:
    """The configurations to run, from the flags (AgentError for flags that do not go together)."""
    from agents.common import AgentError

    if not args.ladder:
        if args.rungs:
            raise AgentError("--rungs goes with --ladder")
        opts = dict(policy=args.policy or "planner", verify=not args.no_verify, recall=not args.no_recall)
        name = opts["policy"] + "+verify" * opts["verify"] + "+recall" * opts["recall"]
        return [Rung(name, opts, args.repeat)]
    if args.policy or args.no_verify or args.no_recall:
        raise AgentError("--ladder runs every configuration: drop --policy, --no-verify and --no-recall")
    names = _words(args.rungs) or list(RUNGS)
    unknown = [n for n in names if n not in RUNGS]
    if unknown:
        raise AgentError(f"unknown rung {unknown[0]!r} (rungs: {', '.join(RUNGS)})")
    return [Rung(n, RUNGS[n], max(2, args.repeat) if n == "repeats" else 1) for n in names]


def check_args(args) -> None:
    from agents.common import AgentError

    for flag, value, low in (("--repeat", args.repeat, 1), ("--limit", args.limit, 1),
                             ("--variants", args.variants, 0), ("--explore-budget", args.explore_budget, 0)):
        if value is not None and value < low:
            raise AgentError(f"{flag} {value}: expected at least {low}")
    if args.only_variants and args.variants < 1:
        raise AgentError("--only-variants needs --variants K (K at least 1)")


def shipped_tasks(args) -> list[BenchTask]:
    from agents.common import AgentError
    from agents.harness.task_eval import DEFAULT_TASK_FILES, load_task_files

    if args.only_variants:
        return []
    try:
        tasks = load_task_files(args.tasks or DEFAULT_TASK_FILES)
    except ValueError as exc:
        raise AgentError(str(exc)) from None
    apps, ids = set(_words(args.apps)), set(_words(args.ids))
    unknown = sorted(ids - {t.id for t in tasks})
    if unknown:
        raise AgentError(f"no task {unknown[0]!r} in the task files")
    return [BenchTask(t, "shipped") for t in tasks
            if (not apps or t.app in apps) and (not ids or t.id in ids)]


def drawn_tasks(args, control, shipped: list[BenchTask]) -> list[BenchTask]:
    """``--variants K`` per app: the --apps given, else the shipped tasks' apps (every app the
    templates know with --only-variants)."""
    from agents.common import AgentError
    from agents.harness import variants

    if not args.variants:
        return []
    apps = _words(args.apps) or sorted({b.task.app for b in shipped} & set(variants.APPS)) or list(variants.APPS)
    control.reset()
    try:
        drawn = variants.draw(apps, args.variants, args.seed, fresh_state=control.state())
    except ValueError as exc:
        raise AgentError(str(exc)) from None
    return [BenchTask(t, "variant") for t in drawn]


def cmd_agent_bench(args) -> int:
    from agents.common import AgentError
    from agents.harness.control import PhoneControl
    from agents.harness.task_eval import TaskEvalError

    from .agent_bench_report import exploration_table, results_table
    from ..loading import load_engine
    from ..phone_agent import connect, resolve_apps

    check_args(args)              # the flags and the task files first: no phone, no model needed
    rungs = plan_rungs(args)
    shipped = shipped_tasks(args)
    s = args.loaded.settings
    device = connect(s, args.locations)
    folders: list[Path] = []
    try:
        control = PhoneControl(device.conn)
        if not control.is_virtual():
            raise AgentError(f"{device.address} is not hexa's virtual phone: agent-bench judges tasks on "
                             f"the phone's state (start one with `hexa phone serve`)")
        tasks = (shipped + drawn_tasks(args, control, shipped))[:args.limit]
        if not tasks:
            raise AgentError("no tasks to run (see --tasks, --apps, --ids)")
        apps = resolve_apps(dict.fromkeys(b.task.app for b in tasks), device.apps)
        engine = load_engine(s, args.locations)
        if args.memory:
            base = args.locations.data
        else:
            base = Path(tempfile.mkdtemp(prefix="hexa-bench-memory-"))
            folders.append(base)
        explored = explore(device, control, base, engine, apps, args.explore_budget, config.memory_options(s))
        if explored:
            print(exploration_table(explored))
        runs = []
        try:
            for rung in rungs:
                runs += run_rung_in(base if not args.ladder else _copy(base, rung.name, folders),
                                    engine, device, control, s, rung, tasks)
        except TaskEvalError as exc:
            raise AgentError(str(exc)) from None
    finally:
        device.close()
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    print(results_table(runs))
    if args.json:
        args.json.write_text(json.dumps({
            "model": engine.model_name, "method": s.method, "max_steps": s.agent_steps,
            "explore_budget": args.explore_budget, "exploration": explored,
            "rungs": [{"name": r.name, "options": r.options, "repeat": r.repeat} for r in rungs],
            "tasks": len(tasks), "runs": runs}, indent=1), encoding="utf-8")
    return 0


def _copy(base: Path, name: str, folders: list[Path]) -> Path:
    """A rung's own copy of the explored memory (the original is closed: its files are whole)."""
    folder = Path(tempfile.mkdtemp(prefix=f"hexa-bench-{name.replace('+', '-')}-"))
    folders.append(folder)
    shutil.copytree(Path(base) / "memory", folder / "memory")
    return folder


def explore(device, control, folder: Path, engine, apps: list[tuple[str, str]], budget: int,
            options=None) -> list[dict]:
    """Every app the tasks involve, explored into the memory at ``folder`` from a fresh phone; the
    cost per app (this run's actions, the graph's size, minutes)."""
    from agents.ui.knowledge import Knowledge
    from memory import Memory

    from .agent_explore import LiveLine
    from ..phone_agent import explore_apps, progress_text, summary_text

    if budget < 1:
        return []
    line = LiveLine(budget)

    def explored(i, name, r) -> None:
        line.clear()
        print(summary_text(r), file=sys.stderr, flush=True)

    with Memory.open(folder, tokenizer=engine.encode, options=options) as memory:
        reports = explore_apps(device, Knowledge(memory.ui_graphs), apps, budget,
                               progress=lambda i, name, r: line.show(progress_text(i, len(apps), name, r), r),
                               explored=explored, before=lambda package: control.reset())
    control.reset()
    return [{"app": name, "package": r.package, "actions": r.actions, "screens": r.screens, "edges": r.edges,
             "seconds": round(r.seconds, 1), "finished": r.finished, "note": r.note}
            for (name, _), r in zip(apps, reports)]


def run_rung_in(folder: Path, engine, device, control, settings, rung: Rung, tasks: list[BenchTask]) -> list[dict]:
    from agents.ui.agent import UIAgent
    from memory import Memory

    from .agent_bench_runs import run_rung
    from ..phone_agent import agent_options

    options = agent_options(settings, virtual=True, **rung.options)
    with Memory.open(folder, tokenizer=engine.encode, options=config.memory_options(settings)) as memory:
        return run_rung(UIAgent, engine, memory, device, control, options, rung, tasks)
