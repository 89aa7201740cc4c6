"""The one CLI, ``hexa``: no argument opens the TUI; subcommands for one-shot use and benchmarks."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version

from . import cli_engine
from .locations import locations


def hexa_version() -> str:
    try:
        return version("hexa")
    except PackageNotFoundError:
        return "0+unknown"


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (the full usage is one ``--help`` away)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="hexa",
        description="Terminal chat and agent app with NPU-aligned speculative decoding. "
                    "Run without a command to open the app.")
    parser.add_argument("--version", action="version", version=f"hexa {hexa_version()}")
    cli_engine.add_model_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    cli_engine.register(sub)
    try:
        from . import cli_memory
    except ImportError:
        cli_memory = None
    if cli_memory is not None:
        cli_memory.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    loc = locations()
    args.locations = loc
    args.data_dir = loc.data
    args.cache_dir = loc.cache
    try:
        if args.command is None:
            from .tui import run_tui

            return run_tui(args) or 0
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


def describe_error(exc: Exception, log_dir) -> str:
    """One line for the user; an unexpected error's traceback goes to the log folder."""
    from engine.errors import EngineError

    expected: tuple[type, ...] = (EngineError, OSError)
    try:
        from memory import MemoryError as StoreError  # noqa: A004

        expected += (StoreError,)
    except ImportError:
        pass
    if isinstance(exc, expected):
        return str(exc) or exc.__class__.__name__
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / "errors.log", "a") as log:
            traceback.print_exception(exc, file=log)
        where = f" (details in {log_dir / 'errors.log'})"
    except OSError:
        where = ""
    return f"internal error: {exc.__class__.__name__}: {exc}{where}"


if __name__ == "__main__":
    sys.exit(main())
