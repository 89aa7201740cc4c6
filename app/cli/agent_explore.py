"""``hexa agent explore``: learn the phone's apps into the user's memory before (or between) tasks.

Each app is crawled over adb alone into its UI transition graph (``agents.ui.explore``), safely:
nothing sensitive is confirmed, switches are flipped back. A live line on stderr says how far it
is; one summary line per app goes to stdout. Ctrl+C stops after the action under way and keeps
everything learned: exploring the app again goes on where it stopped.
"""
from __future__ import annotations

import sys
import threading

from .. import settings as config
from ..phone_agent import EXPLORE_BUDGET, app_label, progress_text, summary_text


def register(cmds) -> None:
    p = cmds.add_parser("explore", help="learn the phone's apps first (kept in memory)",
                        description="Explore each app of the phone into a UI transition graph kept in "
                                    "your memory, which the agent plans with. Safe on a real phone "
                                    "(nothing sensitive is confirmed, switches are flipped back); "
                                    "Ctrl+C stops and keeps what was learned, and running it again "
                                    "goes on where it stopped.")
    p.add_argument("--app", action="append", default=None, metavar="NAME",
                   help="an app to explore, by name (Clock) or package (repeatable; default: every "
                        "app of the phone that hexa knows)")
    p.add_argument("--budget", type=int, default=EXPLORE_BUDGET, metavar="N",
                   help=f"most actions per app in this run (default {EXPLORE_BUDGET})")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true",
                      help="the apps explored so far: screens, edges, actions spent (no phone needed)")
    what.add_argument("--forget", action="append", default=None, metavar="APP",
                      help="drop what was learned about APP (repeatable; no phone needed)")
    config.add_flags(p.add_argument_group("device"), ("device",), top_level=False)
    p.set_defaults(func=cmd_explore, uses_settings=True)


def cmd_explore(args) -> int:
    from agents.common import AgentError
    from agents.ui.knowledge import Knowledge

    from ..loading import open_memory
    from ..phone_agent import connect, describe, explore_apps, forget_app, known_apps, resolve_apps

    if args.list:
        with open_memory(args.locations, settings=args.loaded.settings) as memory:
            print(list_table(known_apps(memory)))
        return 0
    if args.forget:
        with open_memory(args.locations, settings=args.loaded.settings) as memory:
            for given in args.forget:
                print(f"hexa: forgot {forget_app(memory, given)}", file=sys.stderr)
        return 0
    if args.budget < 1:
        raise AgentError(f"--budget {args.budget}: expected at least 1 action per app")
    device = connect(args.loaded.settings, args.locations)
    try:
        apps = resolve_apps(args.app, device.apps) if args.app else list(device.apps.items())
        if not apps:
            raise AgentError(f"{device.address} has none of the apps hexa knows")
        print(f"hexa: exploring {', '.join(n for n, _ in apps)} on {describe(device)}, at most "
              f"{args.budget} actions each", file=sys.stderr)
        line, stop = LiveLine(args.budget), threading.Event()
        with open_memory(args.locations, settings=args.loaded.settings) as memory:
            knowledge = Knowledge(memory.ui_graphs)

            def explored(i, name, report) -> None:
                line.clear()
                print(summary_text(report, stopped=stop.is_set()), flush=True)

            def explore(cancel: threading.Event):
                return explore_apps(device, knowledge, apps, args.budget, cancel,
                                    progress=lambda i, name, r: line.show(progress_text(i, len(apps), name, r), r),
                                    explored=explored)

            interrupted = run_stoppable(explore, stop)
    finally:
        device.close()
    if interrupted:
        print("hexa: stopped; what was learned is kept (run it again to go on)", file=sys.stderr)
        return 130
    return 0


class LiveLine:
    """One line on stderr rewritten in place on a terminal; elsewhere (a log) a line every tenth
    of the budget."""

    def __init__(self, budget: int):
        self.tty = sys.stderr.isatty()
        self.every = max(1, budget // 10)
        self.shown = -1
        self.dirty = False

    def show(self, text: str, report) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
            sys.stderr.flush()
            self.dirty = True
        elif report.actions // self.every != self.shown:
            self.shown = report.actions // self.every
            print(text, file=sys.stderr, flush=True)

    def clear(self) -> None:
        if self.dirty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.dirty = False
        self.shown = -1


def run_stoppable(work, stop: threading.Event) -> bool:
    """Run ``work(stop)`` on a thread; the first Ctrl+C sets ``stop`` and waits for it to wind
    down (the action under way finishes, the graph stays whole), a second one leaves at once.
    Whether it was interrupted; ``work``'s exception is raised here."""
    box: dict = {}
    finished = threading.Event()   # not thread.is_alive(): a join cut by Ctrl+C can say False early

    def run() -> None:
        try:
            box["result"] = work(stop)
        except BaseException as exc:     # handed to the main thread, which reports it
            box["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=run, name="hexa-explore", daemon=True).start()
    interrupted = False
    while not finished.is_set():
        try:
            finished.wait(0.2)
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            stop.set()
            print("\nhexa: stopping after this action (Ctrl+C again quits at once)", file=sys.stderr)
    if "error" in box:
        raise box["error"]
    return interrupted


def list_table(rows: list[dict]) -> str:
    if not rows:
        return "no app explored yet: `hexa agent explore` learns the phone's apps"
    lines = [f"{'app':<10} {'package':<38} {'screens':>7} {'edges':>6} {'actions':>7} {'minutes':>7}  state"]
    for r in rows:
        info = r.get("info") or {}
        lines.append(f"{app_label(r['package']):<10} {r['package']:<38} {r['screens']:>7} {r['edges']:>6} "
                     f"{int(info.get('actions', 0)):>7} {float(info.get('seconds', 0.0)) / 60:>7.1f}  "
                     f"{'complete' if info.get('complete') else 'partial'}")
    return "\n".join(lines)
