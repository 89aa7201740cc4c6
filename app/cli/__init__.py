"""The one CLI, ``hexa``: no argument opens the TUI; subcommands for one-shot use and benchmarks.

Error contract, the same for every subcommand: an error the user can cause (a bad setting, a
missing model or file, a refused document) prints one line and exits 2; an unexpected error also
prints one line and leaves its traceback in ``errors.log`` in the log folder.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version

from .. import settings
from . import agent, agent_bench, ask, bench, info, memory, models, npu, phone, serve
from ..locations import locations


def hexa_version() -> str:
    try:
        return version("hexa")
    except PackageNotFoundError:
        return "0+unknown"


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (the full usage is one ``--help`` away), and no
    abbreviated options: with the sampling flags, `agent-bench --repeat 2` became ambiguous with
    `--repeat-penalty`; abbreviations break whenever an option is added."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="hexa",
        description="Terminal chat and agent app with NPU-aligned speculative decoding. "
                    "Run without a command to open the app.")
    parser.add_argument("--version", action="version", version=f"hexa {hexa_version()}")
    settings.add_flags(parser.add_argument_group("model"), settings.MODEL_FLAGS, top_level=True)
    settings.add_flags(parser.add_argument_group("generation"), settings.GENERATION_FLAGS, top_level=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in (ask, agent, agent_bench, bench, serve, memory, models, phone, npu, info):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    loc = locations()
    args.locations = loc
    args.data_dir = loc.data
    args.cache_dir = loc.cache
    try:
        if args.command is None:
            from ..tui import run_tui

            # the app reports a bad value in a notification and carries on without it
            loaded = settings.load(loc.config_file, flags=settings.flag_values(args), strict=False)
            return run_tui(loaded, loc) or 0
        if getattr(args, "uses_settings", False):
            args.loaded = settings.load(loc.config_file, flags=settings.flag_values(args))
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("hexa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never a traceback on the terminal: one line, details in the log
        if os.environ.get("HEXA_DEBUG"):
            raise
        print(f"hexa: {describe_error(exc, loc.logs)}", file=sys.stderr)
        return 2


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions whose message is meant for the user as is."""
    from agents.common import AgentError
    from agents.ui.actions import ActionError
    from agents.ui.adb import DeviceError
    from engine.errors import EngineError
    from memory import StoreError

    return (settings.ConfigError, EngineError, StoreError, AgentError, DeviceError, ActionError, OSError)


def describe_error(exc: BaseException, log_dir) -> str:
    """One line for the user; an unexpected error's traceback goes to the log folder."""
    if isinstance(exc, user_errors()):
        return str(exc) or exc.__class__.__name__
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / "errors.log", "a") as log:
            traceback.print_exception(exc, file=log)
        where = f" (details in {log_dir / 'errors.log'})"
    except OSError:
        where = ""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"internal error: {exc.__class__.__name__}: {first}{where}"

