"""How Android's Java shell commands (``input``, ``am``, ``pm``, ``wm`` are ``cmd <service>``
behind the scenes) read their arguments and report failures, so ours fail the same way.

An exception escaping a command is printed by BasicShellCommandHandler.exec as an empty line,
"Exception occurred while executing '<first arg>':" and the stack trace; the status is 255.
"""
from __future__ import annotations

import re

HANDLER_FRAMES = (
    "com.android.modules.utils.BasicShellCommandHandler.exec(BasicShellCommandHandler.java:97)",
    "android.os.ShellCommand.exec(ShellCommand.java:38)",
)
BINDER_FRAMES = (
    "android.os.Binder.shellCommand(Binder.java:1085)",
    "android.os.Binder.onTransact(Binder.java:903)",
)
REQUIRED_FRAME = ("com.android.modules.utils.BasicShellCommandHandler.getNextArgRequired"
                  "(BasicShellCommandHandler.java:295)")
TAIL_FRAMES = (
    "android.os.Binder.execTransactInternal(Binder.java:1321)",
    "android.os.Binder.execTransact(Binder.java:1280)",
)
JAVA_FLOAT = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")
JAVA_INT = re.compile(r"[+-]?\d+")


class JavaError(Exception):
    """A Java exception thrown inside a shell command."""

    def __init__(self, cls: str, message: str, frames: tuple[str, ...] = ()):
        super().__init__(message)
        self.cls = cls
        self.message = message
        self.frames = frames


class NumberFormat(JavaError):
    def __init__(self, text: str):
        super().__init__("java.lang.NumberFormatException", f'For input string: "{text}"')


def illegal_argument(message: str, frames: tuple[str, ...] = ()) -> JavaError:
    return JavaError("java.lang.IllegalArgumentException", message, frames)


def java_float(text: str) -> float:
    """Float.parseFloat: surrounding blanks allowed, "1e3", "2f", "NaN", "Infinity"."""
    t = text.strip()
    if not JAVA_FLOAT.fullmatch(t):
        raise NumberFormat(text)
    return float(t.rstrip("fFdD"))


def java_int(text: str) -> int:
    if not JAVA_INT.fullmatch(text) or not -2**31 <= int(text) < 2**31:
        raise NumberFormat(text)
    return int(text)


class Args:
    """ShellCommand's cursor over its arguments (argv[1:], the first being the command)."""

    def __init__(self, args: list[str], owner_frame: str = ""):
        self.args = args
        self.pos = 1 if args else 0
        self.owner_frame = owner_frame      # the command's onCommand, for stack traces

    @property
    def command(self) -> str | None:
        return self.args[0] if self.args else None

    def next(self) -> str | None:
        if self.pos >= len(self.args):
            return None
        self.pos += 1
        return self.args[self.pos - 1]

    def required(self) -> str:
        arg = self.next()
        if arg is None:
            prev = self.args[self.pos - 1] if self.pos else ""
            frames = (REQUIRED_FRAME, self.owner_frame) if self.owner_frame else (REQUIRED_FRAME,)
            raise illegal_argument(f'Argument expected after "{prev}"', frames)
        return arg

    def option(self) -> str | None:
        """The next argument if it is an option ("--" ends the options)."""
        if self.pos >= len(self.args):
            return None
        arg = self.args[self.pos]
        if not arg.startswith("-") or arg == "-":
            return None
        self.pos += 1
        return None if arg == "--" else arg


def report(io, command: str | None, error: JavaError, service: tuple[str, str]) -> int:
    """Print ``error`` as the phone does; the status of a failed Java shell command.
    ``service`` = (its onShellCommand frame, its binder stub's onTransact frame)."""
    frames = (error.frames + HANDLER_FRAMES + service[:1] + BINDER_FRAMES + service[1:]
              + TAIL_FRAMES)
    trace = "".join(f"\tat {frame}\n" for frame in frames)
    io.err.write(f"\nException occurred while executing '{command}':\n"
                 f"{error.cls}: {error.message}\n{trace}")
    return 255


def default_command(io, cmd: str | None, help_text: str) -> int:
    """BasicShellCommandHandler.handleDefaultCommands: help for none/"help"/"-h", else unknown."""
    if cmd is None or cmd in ("help", "-h"):
        io.out.write(help_text)
    else:
        io.out.write(f"Unknown command: {cmd}\n")
    return 255
