"""``hexa agent "task"``: one UI-agent episode on a phone, step by step in the terminal;
``hexa agent explore``: learn the phone's apps first (``agent_explore``);
``hexa agent-bench``: tasks with state checks on the virtual phone (``agent_bench``)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import agent_explore
from .. import settings as config

RUN = " task"     # the hidden parser of `hexa agent <task words>` (a name nobody types)


class _AnyWord(dict):
    """Any first word is a valid choice (argparse checks it against ``choices`` before the
    action sees it)."""

    def __contains__(self, word) -> bool:
        return True


class TaskOrCommand(argparse._SubParsersAction):
    """``hexa agent explore …`` is a subcommand; any other words are the task
    (``hexa agent "Turn off Bluetooth"``), parsed by the hidden task parser."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.choices = _AnyWord()          # (the parsers stay in _name_parser_map)

    def __call__(self, parser, namespace, values, option_string=None):
        if values and values[0] not in self._name_parser_map:
            values = [RUN, *values]
        super().__call__(parser, namespace, values, option_string)


def _task_flags(p, top: bool) -> None:
    # on `agent` itself (``hexa agent --yes "task"``) and on the task parser (``hexa agent "task"
    # --yes``); the task parser's copies must not reset what the first ones set
    keep = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument("--yes", action="store_true", **keep,
                   help="allow sensitive actions (delete, send, pay, ...) without asking")
    p.add_argument("--export", type=Path, metavar="FILE", **keep,
                   help="write every stored episode as JSONL to FILE ('-': stdout) and exit")
    config.add_flags(p.add_argument_group("device"), config.AGENT_FLAGS + ("agent_policy",), top_level=False)
    config.add_flags(p.add_argument_group("model"), config.MODEL_FLAGS, top_level=False)


def register(sub) -> None:
    p = sub.add_parser("agent", help="drive an Android phone over adb to do a task",
                       description="Run one UI-agent episode: read the phone's screen, plan from what "
                                   "exploring its apps taught (`hexa agent explore` first), let the "
                                   "model choose the close calls, act, check each step's effect, "
                                   "repeat until done. Episodes are kept in memory (`hexa agent "
                                   "--export FILE` writes them as JSONL).")
    _task_flags(p, top=True)
    p.set_defaults(func=cmd_agent, uses_settings=True, task=[])
    cmds = p.add_subparsers(dest="agent_command", metavar="TASK | explore", action=TaskOrCommand,
                            help='the task, e.g. "Turn off Bluetooth"; or `explore`: learn the '
                                 "phone's apps (hexa agent explore --help)")
    run = cmds.add_parser(RUN)          # no help: not listed
    run.add_argument("task", nargs="*", help="what to do, e.g. \"Turn off Bluetooth\"")
    _task_flags(run, top=False)
    run.set_defaults(func=cmd_agent, uses_settings=True)
    agent_explore.register(cmds)


def ask_user(question: str) -> bool:
    """A terminal prompt; without a terminal the answer is no."""
    if sys.stdin is None or not sys.stdin.isatty():
        print(f"hexa: {question} -> refused (no terminal to ask; --yes allows it)", file=sys.stderr)
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def cmd_agent(args) -> int:
    from agents.common import AgentError
    from agents.ui.agent import UIAgent

    from ..loading import load_engine, open_memory
    from ..phone_agent import agent_options, connect, describe, is_virtual, known_apps

    s = args.loaded.settings
    if args.export is not None:
        with open_memory(args.locations, settings=s) as memory:
            text = memory.episodes.export_jsonl()
        if str(args.export) == "-":
            sys.stdout.write(text)
        else:
            args.export.write_text(text, encoding="utf-8")
            print(f"hexa: {text.count(chr(10))} episode(s) written to {args.export}", file=sys.stderr)
        return 0
    task = " ".join(" ".join(args.task).split())
    if not task:
        raise AgentError("no task: e.g. hexa agent --device 127.0.0.1:5555 \"Turn off Bluetooth\"")
    device = connect(s, args.locations)
    try:
        virtual = is_virtual(device)
        print(f"hexa: connected to {describe(device)}{', the virtual phone' if virtual else ''}",
              file=sys.stderr)
        engine = load_engine(s, args.locations)
        confirm = (lambda q: True) if args.yes else ask_user
        with open_memory(args.locations, tokenizer=engine.encode, settings=s) as memory:
            if not known_apps(memory):
                print("hexa: no app explored yet: run `hexa agent explore` first (the agent works "
                      "without, worse)", file=sys.stderr)
            agent = UIAgent(engine, memory, device, agent_options(s, virtual=virtual), confirm=confirm)
            end = print_episode(agent.run(task))
    finally:
        device.close()
    return 0 if end is not None and end.outcome == "done" else 1


def print_episode(events, out=None):
    """Each step: the screen, the candidates, the action and the engine's figures when the model
    was asked; returns the EpisodeEnd."""
    from agents.events import Acted, EpisodeEnd, Observed
    from engine import Done, Notice

    out = out or sys.stdout
    end = done = None
    for ev in events:
        if isinstance(ev, Observed):
            title = f" · {ev.screen.title}" if ev.screen.title else ""
            print(f"step {ev.step}  {ev.screen.package or '?'}{title} · {len(ev.screen.elements)} elements",
                  file=out)
            for i, e in enumerate(ev.shown[:5], 1):
                print(f"    {i}. {e.describe()}", file=out)
            done = None
        elif isinstance(ev, Done):
            done = ev
        elif isinstance(ev, Notice):
            print(f"hexa: {ev.message}", file=sys.stderr)
        elif isinstance(ev, Acted):
            figures = ""
            if done is not None:
                figures = (f"   [model: {done.new_tokens} tok, {done.mean_accepted:.2f} accepted/step, "
                           f"{done.ms_per_token:.0f} ms/tok, TTFT {done.ttft_ms:.0f} ms]")
            target = f"  ({ev.element})" if ev.element else ""
            print(f"  -> {ev.action}{target}{figures}", file=out)
            if ev.error:
                print(f"     refused by the phone: {ev.error}", file=out)
        elif isinstance(ev, EpisodeEnd):
            end = ev
            print(f"episode {ev.session_id}: {ev.outcome} after {ev.steps} step(s)"
                  + (f" — {ev.message}" if ev.message else ""), file=out)
    return end
