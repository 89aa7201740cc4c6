"""``hexa agent``: one UI-agent episode on a phone, step by step in the terminal;
``hexa agent-bench``: tasks with state checks on the virtual phone (``cli_agent_bench``)."""
from __future__ import annotations

import sys
from pathlib import Path

from . import settings as config


def register(sub) -> None:
    p = sub.add_parser("agent", help="drive an Android phone over adb to do a task",
                       description="Run one UI-agent episode: read the phone's screen, choose one "
                                   "action (constrained to what the screen offers), perform it, "
                                   "repeat until done. Trajectories are kept in memory "
                                   "(`hexa agent --export FILE` writes them as JSONL).")
    p.add_argument("task", nargs="?", help="what to do, e.g. \"Turn off Bluetooth\"")
    p.add_argument("--yes", action="store_true",
                   help="allow sensitive actions (delete, send, pay, ...) without asking")
    p.add_argument("--export", type=Path, metavar="FILE",
                   help="write every stored episode as JSONL to FILE ('-': stdout) and exit")
    config.add_flags(p.add_argument_group("device"), config.AGENT_FLAGS, top_level=False)
    config.add_flags(p.add_argument_group("model"), config.MODEL_FLAGS, top_level=False)
    p.set_defaults(func=cmd_agent, uses_settings=True)


def ask_user(question: str) -> bool:
    """A terminal prompt; without a terminal the answer is no."""
    if sys.stdin is None or not sys.stdin.isatty():
        print(f"hexa: {question} -> refused (no terminal to ask; --yes allows it)", file=sys.stderr)
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def connect(settings, locs, on_auth=None):
    """The device in the settings, connected (``DeviceError`` with a one-line reason)."""
    from agents.ui.adb import AdbConnection
    from agents.ui.device import Device

    def say_auth():
        print(f"hexa: allow hexa's adb key on {settings.device}'s screen", file=sys.stderr)

    conn = AdbConnection(settings.device, locs.adb_keys, on_auth=on_auth or say_auth)
    device = Device(conn)
    device.connect()
    return device


def cmd_agent(args) -> int:
    from agents.common import AgentError
    from agents.ui.agent import UIAgent

    from .loading import load_engine, open_memory

    s = args.loaded.settings
    if args.export is not None:
        with open_memory(args.locations) as memory:
            text = memory.episodes.export_jsonl()
        if str(args.export) == "-":
            sys.stdout.write(text)
        else:
            args.export.write_text(text, encoding="utf-8")
            print(f"hexa: {text.count(chr(10))} episode(s) written to {args.export}", file=sys.stderr)
        return 0
    if not (args.task or "").strip():
        raise AgentError("no task: e.g. hexa agent --device 127.0.0.1:5555 \"Turn off Bluetooth\"")
    device = connect(s, args.locations)
    print(f"hexa: connected to {device.address} ({device.model or 'unknown model'}, "
          f"{device.size[0]}x{device.size[1]})", file=sys.stderr)
    engine = load_engine(s, args.locations)
    confirm = (lambda q: True) if args.yes else ask_user
    virtual = device.virtual_state() is not None
    with open_memory(args.locations, tokenizer=engine.encode) as memory:
        agent = UIAgent(engine, memory, s, device, confirm=confirm, settle_s=0.0 if virtual else 1.0)
        end = print_episode(agent.run(args.task))
    device.close()
    return 0 if end is not None and end.outcome == "done" else 1


def print_episode(events):
    """Each step: the screen, the action and the engine's figures; returns the EpisodeEnd."""
    from agents.events import Acted, EpisodeEnd, Observed
    from engine import Done, Notice

    end = None
    done = None
    for ev in events:
        if isinstance(ev, Observed):
            title = f" · {ev.screen.title}" if ev.screen.title else ""
            print(f"step {ev.step}  {ev.screen.package or '?'}{title} · {len(ev.screen.elements)} elements")
            for i, e in enumerate(ev.shown[:5], 1):
                print(f"    {i}. {e.describe()}")
        elif isinstance(ev, Done):
            done = ev
        elif isinstance(ev, Notice):
            print(f"hexa: {ev.message}", file=sys.stderr)
        elif isinstance(ev, Acted):
            figures = ""
            if done is not None:
                figures = (f"   [{done.new_tokens} tok, {done.mean_accepted:.2f} accepted/step, "
                           f"{done.ms_per_token:.0f} ms/tok, TTFT {done.ttft_ms:.0f} ms]")
            target = f"  ({ev.element})" if ev.element else ""
            print(f"  -> {ev.action}{target}{figures}")
            if ev.error:
                print(f"     refused by the phone: {ev.error}")
        elif isinstance(ev, EpisodeEnd):
            end = ev
            verdict = "" if ev.success is None else (" · check passed" if ev.success else " · check FAILED")
            print(f"episode {ev.session_id}: {ev.outcome} after {ev.steps} step(s){verdict}"
                  + (f" — {ev.message}" if ev.message else ""))
    return end
