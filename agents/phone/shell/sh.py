"""The phone's ``sh``: runs a command line as Android's mksh would, for the commands an adb
client uses (``input``, ``uiautomator``, ``am``, ``dumpsys``, … see the command modules).

``Shell(phone).run(line)`` returns what ``adb shell line`` prints (stdout and stderr merged, no
exit code, as the plain ``shell:`` service delivers); ``execute`` also gives the status.
Every simple command that runs, including those inside $(…) and `…`, is appended to
``history`` as its argv, so a test can prove that text meant as data never ran as a command.
"""
from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass

from .. import Phone
from .activity_cmds import COMMANDS as ACTIVITY_COMMANDS
from .device_cmds import COMMANDS as DEVICE_COMMANDS
from .builtins import COMMANDS as BUILTIN_COMMANDS, ShellExit
from .parse import AndOr, Lit, Parser, Pipeline, Redirect, ShSyntaxError, Simple, Sub, Var
from .text import COMMANDS as TEXT_COMMANDS
from .vfs import WRITABLE, FileSystem

log = logging.getLogger(__name__)

SH = "/system/bin/sh"
BIN_DIRS = ("/system/bin", "/system/xbin", "/vendor/bin", "/product/bin", "/bin")
ENVIRONMENT = {
    "PATH": "/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:"
            "/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin",
    "HOME": "/", "USER": "shell", "LOGNAME": "shell", "SHELL": "/bin/sh", "TMPDIR": "/data/local/tmp",
    "EXTERNAL_STORAGE": "/sdcard", "ANDROID_DATA": "/data", "ANDROID_ROOT": "/system", "IFS": " \t\n",
}
PID = "4242"
HISTORY_LIMIT = 100_000   # a long-running phone keeps the most recent commands only


@dataclass
class Result:
    output: str
    status: int
    exited: bool        # the line ran ``exit``


class Buffer:
    """Where output goes: the terminal, a pipe or a command substitution."""

    def __init__(self):
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def text(self) -> str:
        return "".join(self.parts)


class Null:
    def write(self, text: str) -> None:
        pass


class FileSink:
    def __init__(self, fs: FileSystem, path: str, append: bool):
        self.fs, self.path = fs, path
        fs.write(path, "", append=append)   # ">" truncates even if nothing is written

    def write(self, text: str) -> None:
        self.fs.write(self.path, text, append=True)


@dataclass
class Io:
    out: object         # .write(str)
    err: object
    stdin: str | None = None


class Ctx:
    """One shell process: its variables, positional arguments, last status and directory."""

    def __init__(self, variables: dict, args: list[str] | None = None, name: str = SH):
        self.vars = variables
        self.args = args or []
        self.name = name            # $0
        self.status = 0
        self.sub_status = 0

    @property
    def cwd(self) -> str:
        return self.vars.get("PWD", "/")

    def fork(self) -> Ctx:
        child = Ctx(dict(self.vars), list(self.args), self.name)
        child.status = self.status
        return child


class Shell:
    def __init__(self, phone: Phone, *, max_sleep_s: float = 2.0):
        self.phone = phone
        # the device's own storage when it has one (files apps save are seen by `ls` and `cat`)
        self.fs = getattr(phone, "fs", None) or FileSystem()
        self.history: list[list[str]] = []
        self.busy_dumps = 0                 # `hexa-phone busy N`: the next N dumps fail
        self.size_override: tuple[int, int] | None = None
        self.density_override: int | None = None
        self.max_sleep_s = max_sleep_s
        self.touch: tuple[int, int, float] | None = None   # an `input motionevent DOWN` in progress
        self.last_status = 0
        self.commands = {**BUILTIN_COMMANDS, **TEXT_COMMANDS, **DEVICE_COMMANDS, **ACTIVITY_COMMANDS}

    def run(self, command_line: str) -> str:
        return self.execute(command_line).output

    def execute(self, command_line: str, variables: dict | None = None) -> Result:
        """Run ``command_line`` as ``sh -c`` does; ``variables`` carries a session's shell
        variables from one line to the next (a fresh shell per call without it)."""
        with self.phone.lock:
            terminal = Buffer()
            ctx = Ctx(variables if variables is not None else {})
            exited = False
            try:
                self.run_script(command_line, ctx, Io(terminal, terminal))
            except ShellExit as stop:
                ctx.status, exited = stop.code, True
            self.last_status = ctx.status
            return Result(terminal.text(), ctx.status, exited)

    def reset(self) -> None:
        """The shell's share of a factory reset: files, display overrides, pending busy dumps."""
        self.fs.reset()
        self.busy_dumps = 0
        self.size_override = self.density_override = None

    # -- running ---------------------------------------------------------------------------
    def run_script(self, text: str, ctx: Ctx, io: Io) -> int:
        parser = Parser(text)
        while True:
            try:
                line = parser.next_line()
            except (ShSyntaxError, RecursionError) as exc:
                message = exc if isinstance(exc, ShSyntaxError) else "syntax error: nested too deeply"
                io.err.write(f"{SH}: {message}\n")
                ctx.status = 1
                return 1
            if line is None:
                return ctx.status
            self.run_list(line, ctx, io)

    def run_list(self, items: list[AndOr], ctx: Ctx, io: Io) -> int:
        for item in items:
            status = self.run_pipeline(item.first, ctx, io)
            for op, pipeline in item.rest:
                if (op == "&&") == (status == 0):
                    status = self.run_pipeline(pipeline, ctx, io)
        return ctx.status

    def run_pipeline(self, pipe: Pipeline, ctx: Ctx, io: Io) -> int:
        if len(pipe.commands) == 1:
            status = self.run_simple(pipe.commands[0], ctx, io)
        else:
            stdin = io.stdin
            for index, command in enumerate(pipe.commands):
                last = index == len(pipe.commands) - 1
                out = io.out if last else Buffer()
                try:   # each part of a pipeline is a subshell of its own
                    status = self.run_simple(command, ctx.fork(), Io(out, io.err, stdin))
                except ShellExit as stop:
                    status = stop.code
                if not last:
                    stdin = out.text()
        if pipe.negate:
            status = 0 if status else 1
        ctx.status = status
        return status

    def run_simple(self, cmd: Simple, ctx: Ctx, io: Io) -> int:
        ctx.sub_status = 0
        argv = [field for word in cmd.words for field in self.expand(word, ctx, io)]
        values = [(name, self.expand_one(word, ctx, io)) for name, word in cmd.assigns]
        io = self.redirect(cmd.redirects, ctx, io)
        if io is None:
            ctx.status = 1
            return 1
        if not argv:
            ctx.vars.update(values)
            ctx.status = ctx.sub_status
            return ctx.status
        self.history.append(list(argv))
        if len(self.history) > HISTORY_LIMIT:
            del self.history[:len(self.history) - HISTORY_LIMIT]
        name = argv[0]
        func = self.commands.get(name)
        if func is None and posixpath.dirname(name) in BIN_DIRS:
            func = self.commands.get(posixpath.basename(name))
        if func is None:
            io.err.write(f"{SH}: {name}: inaccessible or not found\n")
            ctx.status = 127
            return 127
        try:
            status = func(self, argv, io, ctx)
        except ShellExit:
            raise
        except Exception as exc:   # a device bug must not take the connection down
            log.exception("command %r failed", argv)
            io.err.write(f"{name}: {type(exc).__name__}: {exc}\n")
            status = 1
        ctx.status = status
        return status

    def run_nested(self, text: str, ctx: Ctx, io: Io, args: list[str] | None = None) -> int:
        """``sh -c TEXT NAME ARGS…``: a child shell process (``args`` = [NAME, ARGS…])."""
        child = Ctx(dict(ctx.vars), args[1:], args[0]) if args else Ctx(dict(ctx.vars))
        try:
            return self.run_script(text, child, io)
        except ShellExit as stop:
            return stop.code

    # -- expansion -------------------------------------------------------------------------
    def variable(self, name: str, ctx: Ctx) -> str:
        if name == "?":
            return str(ctx.status)
        if name == "$":
            return PID
        if name == "0":
            return ctx.name
        if name == "#":
            return str(len(ctx.args))
        if name in "@*":
            return " ".join(ctx.args)
        if name.isdigit():
            return ctx.args[int(name) - 1] if int(name) <= len(ctx.args) else ""
        if name in ("!", "-"):
            return ""
        if name in ctx.vars:
            return ctx.vars[name]
        if name == "HOSTNAME":
            return self.phone.properties().get("ro.product.device", "localhost")
        return ENVIRONMENT.get(name, "")

    def substitute(self, sub: Sub, ctx: Ctx, io: Io) -> str:
        out = Buffer()
        child = ctx.fork()
        try:
            self.run_list(sub.body, child, Io(out, io.err))
        except ShellExit as stop:
            child.status = stop.code
        ctx.sub_status = child.status
        return out.text().rstrip("\n")

    def expand(self, word: list, ctx: Ctx, io: Io) -> list[str]:
        """A word's fields: quoted text stays whole, unquoted $… results split on blanks."""
        fields: list[str] = []
        current: list[str] = []
        started = False
        for part in word:
            if isinstance(part, Lit):
                current.append(part.text)
                started = started or part.quoted or bool(part.text)
                continue
            value = self.variable(part.name, ctx) if isinstance(part, Var) else self.substitute(part, ctx, io)
            if part.quoted:
                current.append(value)
                started = True
                continue
            pieces = value.split()
            for index, piece in enumerate(pieces):
                if (index or value[:1].isspace()) and started:
                    fields.append("".join(current))
                    current, started = [], False
                current.append(piece)
                started = True
            if value[-1:].isspace() and started:
                fields.append("".join(current))
                current, started = [], False
        if started:
            fields.append("".join(current))
        return fields

    def expand_one(self, word: list, ctx: Ctx, io: Io) -> str:
        """Expansion without field splitting (assignments, redirection targets)."""
        out = []
        for part in word:
            if isinstance(part, Lit):
                out.append(part.text)
            elif isinstance(part, Var):
                out.append(self.variable(part.name, ctx))
            else:
                out.append(self.substitute(part, ctx, io))
        return "".join(out)

    # -- redirection -----------------------------------------------------------------------
    def redirect(self, redirects: list[Redirect], ctx: Ctx, io: Io) -> Io | None:
        fds = {1: io.out, 2: io.err}
        stdin = io.stdin
        for r in redirects:
            target = self.expand_one(r.target, ctx, io)
            if r.op in (">&", "<&"):
                if target == "-":
                    sink = Null()
                elif target in ("0", "1", "2"):
                    sink = fds.get(int(target), Null())
                else:
                    fds[2].write(f"{SH}: {target}: illegal file descriptor name\n")
                    return None
                if r.fd in fds:
                    fds[r.fd] = sink
                continue
            path = self.fs.resolve(target, ctx.cwd)
            if r.op == "<":
                text = "" if path == "/dev/null" else self.fs.read(path)
                if text is None:
                    fds[2].write(f"{SH}: can't open {target}: No such file or directory\n")
                    return None
                if r.fd == 0:
                    stdin = text
                continue
            sink = self.open_for_writing(path, target, r.op == ">>", fds)
            if sink is None:
                return None
            if r.fd in fds:
                fds[r.fd] = sink
        return Io(fds[1], fds[2], stdin)

    def open_for_writing(self, path: str, target: str, append: bool, fds: dict):
        if path == "/dev/null":
            return Null()
        if path in ("/dev/stdout", "/dev/tty", "/dev/stderr"):
            return fds[2] if path == "/dev/stderr" else fds[1]
        if self.fs.writable(path) and not self.fs.is_dir(path):
            return FileSink(self.fs, path, append)
        if self.fs.is_dir(path):
            reason = "Is a directory"
        elif any(path.startswith(d + "/") for d in WRITABLE):
            reason = "No such file or directory"
        elif path.startswith("/data/"):
            reason = "Permission denied"
        else:
            reason = "Read-only file system"
        fds[2].write(f"{SH}: can't create {target}: {reason}\n")
        return None
