"""mksh builtins and the toybox file commands the phone's shell offers: echo, printf, true,
false, sleep, exit, cd, pwd, export, unset, sh, cat, rm, ls, mkdir, touch, which, id, whoami.
Messages follow mksh ("/system/bin/sh: …") and toybox ("cat: FILE: No such file or directory").
"""
from __future__ import annotations

import re
import time

ECHO_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                "v": "\v", "\\": "\\"}
ID_LINE = ("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),"
           "1015(sdcard_rw),1028(sdcard_r),1078(ext_data_rw),1079(ext_obb_rw),3001(net_bt_admin),"
           "3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),3011(uhid),3012(readtracefs) "
           "context=u:r:shell:s0\n")
SHELL_ONLY = {"cd", "exit", "export", "unset", "pwd", "true", "false"}


def unescape(text: str) -> tuple[str, bool]:
    """Backslash sequences as mksh's echo and printf read them; (text, stopped at \\c)."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "c":
                return "".join(out), True
            if n == "0" or n.isdigit() and n < "8":
                digits = re.match(r"0?[0-7]{0,3}", text[i + 1:]).group()
                out.append(chr(int(digits or "0", 8) & 0xFF))
                i += 1 + len(digits)
                continue
            if n in ECHO_ESCAPES:
                out.append(ECHO_ESCAPES[n])
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out), False


def echo(sh, argv, io, ctx) -> int:
    args, newline, escapes = argv[1:], True, True
    while args and re.fullmatch(r"-[neE]+", args[0]):
        for flag in args[0][1:]:
            newline = newline and flag != "n"
            escapes = flag != "E" if flag in "eE" else escapes
        args = args[1:]
    text = " ".join(args)
    if escapes:   # mksh's echo reads backslash sequences by default
        text, stopped = unescape(text)
        newline = newline and not stopped
    io.out.write(text + ("\n" if newline else ""))
    return 0


def printf(sh, argv, io, ctx) -> int:
    if len(argv) < 2:
        io.err.write("usage: printf format [arguments...]\n")
        return 1
    fmt, args = argv[1], argv[2:]
    spec = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)([sdiuxXoc%b])")
    while True:
        used = 0

        def convert(m: re.Match) -> str:
            nonlocal used
            flags, kind = m.groups()
            if kind == "%":
                return "%"
            value = args[used] if used < len(args) else ""
            used += 1
            if kind in "sb":
                return ("%" + flags + "s") % (unescape(value)[0] if kind == "b" else value)
            if kind == "c":
                return value[:1]
            try:
                number = int(value or "0", 0)
            except ValueError:
                io.err.write(f"printf: invalid number '{value}'\n")
                number = 0
            return ("%" + flags + ("d" if kind in "iu" else kind)) % number

        io.out.write(unescape(spec.sub(convert, fmt))[0])
        args = args[used:]
        if not args or not used:
            return 0


def true(sh, argv, io, ctx) -> int:
    return 0


def false(sh, argv, io, ctx) -> int:
    return 1


def sleep(sh, argv, io, ctx) -> int:
    if len(argv) < 2:
        io.err.write("sleep: Needs 1 argument (see \"sleep --help\")\n")
        return 1
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", argv[1])
    if not m:
        io.err.write(f"sleep: Not a number '{argv[1]}'\n")
        return 1
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    time.sleep(min(seconds, sh.max_sleep_s))   # capped: the device lock is held meanwhile
    return 0


class ShellExit(Exception):
    """``exit``: unwinds to the shell process that ran it (a subshell stops there)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def exit_(sh, argv, io, ctx) -> int:
    code = int(argv[1]) & 0xFF if len(argv) > 1 and argv[1].lstrip("-").isdigit() else ctx.status
    raise ShellExit(code)


def cd(sh, argv, io, ctx) -> int:
    target = argv[1] if len(argv) > 1 else "/"
    path = sh.fs.resolve(target, ctx.cwd)
    if sh.fs.denied(path) or not sh.fs.is_dir(path):
        reason = "Permission denied" if sh.fs.denied(path) else "No such file or directory"
        io.err.write(f"/system/bin/sh: cd: {target}: {reason}\n")
        return 2
    ctx.vars["PWD"] = path
    return 0


def pwd(sh, argv, io, ctx) -> int:
    io.out.write(ctx.cwd + "\n")
    return 0


def export(sh, argv, io, ctx) -> int:
    for arg in argv[1:]:
        name, eq, value = arg.partition("=")
        if eq:
            ctx.vars[name] = value
    return 0


def unset(sh, argv, io, ctx) -> int:
    for name in argv[1:]:
        ctx.vars.pop(name, None)
    return 0


def sh_(sh, argv, io, ctx) -> int:
    """``sh -c TEXT [NAME ARGS…]``, ``sh FILE`` or a script on stdin."""
    args = argv[1:]
    if args[:1] == ["-c"]:
        if len(args) < 2:
            io.err.write("/system/bin/sh: -c: option requires an argument\n")
            return 1
        return sh.run_nested(args[1], ctx, io, args[2:])
    if args:
        text = sh.fs.read(sh.fs.resolve(args[0], ctx.cwd))
        if text is None:
            io.err.write(f"/system/bin/sh: {args[0]}: No such file or directory\n")
            return 127
        return sh.run_nested(text, ctx, io, args)
    return sh.run_nested(io.stdin or "", ctx, io)


def _problem(sh, path: str) -> str | None:
    if sh.fs.denied(path):
        return "Permission denied"
    return None if sh.fs.exists(path) else "No such file or directory"


def cat(sh, argv, io, ctx) -> int:
    status = 0
    for name in argv[1:] or ["-"]:
        if name == "-":
            io.out.write(io.stdin or "")
            continue
        path = sh.fs.resolve(name, ctx.cwd)
        problem = _problem(sh, path) or ("Is a directory" if sh.fs.is_dir(path) else None)
        if problem:
            io.err.write(f"cat: {name}: {problem}\n")
            status = 1
        else:
            io.out.write(sh.fs.read(path))
    return status


def rm(sh, argv, io, ctx) -> int:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and len(a) > 1)
    status = 0
    for name in (a for a in argv[1:] if not a.startswith("-") or a == "-"):
        path = sh.fs.resolve(name, ctx.cwd)
        problem = _problem(sh, path)
        if problem is None and sh.fs.is_dir(path):
            if "r" not in flags.lower():
                problem = "Is a directory"
            else:
                for inner in [f for f in sh.fs.files if f.startswith(path + "/")]:
                    sh.fs.remove(inner)
                continue
        if problem is None and not sh.fs.writable(path):
            problem = "Read-only file system"
        if problem is None:
            sh.fs.remove(path)
        elif not ("f" in flags and problem == "No such file or directory"):
            io.err.write(f"rm: {name}: {problem}\n")
            status = 1
    return status


def ls(sh, argv, io, ctx) -> int:
    names = [a for a in argv[1:] if not a.startswith("-")]
    status = 0
    for index, name in enumerate(names or ["."]):
        path = sh.fs.resolve(name, ctx.cwd)
        problem = _problem(sh, path)
        if problem:
            io.err.write(f"ls: {name}: {problem}\n")
            status = 1
        elif sh.fs.is_dir(path):
            if len(names) > 1:
                io.out.write(("\n" if index else "") + f"{name}:\n")
            io.out.write("".join(n + "\n" for n in sh.fs.listdir(path)))
        else:
            io.out.write(name + "\n")
    return status


def mkdir(sh, argv, io, ctx) -> int:
    status = 0
    for name in (a for a in argv[1:] if not a.startswith("-")):
        path = sh.fs.resolve(name, ctx.cwd)
        if sh.fs.exists(path):
            if "-p" not in argv:
                io.err.write(f"mkdir: {name}: File exists\n")
                status = 1
        elif sh.fs.writable(path) or ("-p" in argv and sh.fs.writable(path.rsplit("/", 1)[0] + "/x")):
            sh.fs.dirs.add(path)
        else:
            io.err.write(f"mkdir: {name}: Permission denied\n")
            status = 1
    return status


def touch(sh, argv, io, ctx) -> int:
    for name in (a for a in argv[1:] if not a.startswith("-")):
        path = sh.fs.resolve(name, ctx.cwd)
        if not sh.fs.exists(path):
            if not sh.fs.writable(path):
                io.err.write(f"touch: '{name}': Permission denied\n")
                return 1
            sh.fs.write(path, "")
    return 0


def which(sh, argv, io, ctx) -> int:
    missing = 0
    for name in argv[1:]:
        if name in sh.commands and name not in SHELL_ONLY:
            io.out.write(f"/system/bin/{name}\n")
        else:
            missing = 1
    return missing


def id_(sh, argv, io, ctx) -> int:
    io.out.write(ID_LINE)
    return 0


def whoami(sh, argv, io, ctx) -> int:
    io.out.write("shell\n")
    return 0


COMMANDS = {"echo": echo, "printf": printf, "true": true, "false": false, "sleep": sleep,
            "exit": exit_, "cd": cd, "pwd": pwd, "export": export, "unset": unset, "sh": sh_,
            "cat": cat, "rm": rm, "ls": ls, "mkdir": mkdir, "touch": touch, "which": which,
            "id": id_, "whoami": whoami, ":": true}
