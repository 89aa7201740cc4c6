"""toybox's text filters for pipes: grep, head, tail, wc, sort. They read their files from the
phone's file system, or stdin (the previous command of a pipeline)."""
from __future__ import annotations

import re

POSIX_CLASSES = {"[:alpha:]": "a-zA-Z", "[:digit:]": "0-9", "[:alnum:]": "a-zA-Z0-9",
                 "[:upper:]": "A-Z", "[:lower:]": "a-z", "[:space:]": r" \t\n\r\f\v",
                 "[:blank:]": r" \t", "[:punct:]": r"!-/:-@\[-`{-~", "[:xdigit:]": "0-9A-Fa-f"}


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """A POSIX bracket expression starting at ``i`` as a Python one; (text, index after)."""
    j = i + 1
    if pattern[j:j + 1] == "^":
        j += 1
    if pattern[j:j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j = pattern.index(":]", j) + 2 if pattern.startswith("[:", j) and ":]" in pattern[j:] else j + 1
    if j >= len(pattern):
        raise re.error("unterminated [")
    body = pattern[i + 1:j]
    negate = body.startswith("^")
    body = body[1:] if negate else body
    out, k = [], 0
    while k < len(body):
        end = body.find(":]", k) + 2 if body.startswith("[:", k) else 0
        if end > 1 and body[k:end] in POSIX_CLASSES:
            out.append(POSIX_CLASSES[body[k:end]])
            k = end
        else:   # inside brackets a backslash is literal in POSIX, special in Python
            out.append("\\" + body[k] if body[k] in "\\[]" else body[k])
            k += 1
    return "[" + ("^" if negate else "") + "".join(out) + "]", j + 1


def posix_regex(pattern: str, extended: bool) -> str:
    """A POSIX basic (grep) or extended (grep -E) regular expression as a Python one."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            text, i = _bracket(pattern, i)
            out.append(text)
            continue
        if c == "\\" and i + 1 < len(pattern):
            n = pattern[i + 1]
            out.append(n if not extended and n in "(){}|+?" else "\\" + n)
            i += 2
            continue
        out.append("\\" + c if not extended and c in "(){}|+?" else c)
        i += 1
    return "".join(out)


def _sources(sh, files: list[str], io, ctx, tool: str, missing: list | None = None):
    """(name, text) for each input; a missing file is reported (and noted in ``missing``)."""
    if not files:
        yield "(standard input)", io.stdin or ""
        return
    for name in files:
        if name == "-":
            yield "(standard input)", io.stdin or ""
            continue
        path = sh.fs.resolve(name, ctx.cwd)
        text = sh.fs.read(path)
        if text is None:
            reason = "Is a directory" if sh.fs.is_dir(path) else "No such file or directory"
            io.err.write(f"{tool}: {name}: {reason}\n")
            if missing is not None:
                missing.append(name)
            continue
        yield name, text


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def grep(sh, argv, io, ctx) -> int:
    flags, patterns, files, explicit = set(), [], [], False
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            files += args[i + 1:]
            break
        if a.startswith("-") and len(a) > 1 and not (files or (patterns and not explicit)):
            for j, f in enumerate(a[1:], 1):
                if f == "e":
                    value = a[j + 1:] or (args[i + 1] if i + 1 < len(args) else None)
                    if value is None:
                        io.err.write('grep: Needs argument for -e (see "grep --help")\n')
                        return 2
                    i += 0 if a[j + 1:] else 1
                    patterns.append(value)
                    explicit = True
                    break
                if f not in "ivEFcnoqwxlhHs":
                    io.err.write(f"grep: Unknown option '{f}' (see \"grep --help\")\n")
                    return 2
                flags.add(f)
        elif not patterns and not explicit:
            patterns.append(a)
        else:
            files.append(a)
        i += 1
    if not patterns:
        io.err.write('grep: Need 1 argument (see "grep --help")\n')
        return 2
    try:
        regex = _grep_regex(patterns, flags)
    except (re.error, ValueError) as exc:
        io.err.write(f"grep: bad regex '{patterns[0]}': {exc}\n")
        return 2
    missing: list[str] = []
    found = _grep_run(sh, regex, flags, files, io, ctx, missing)
    if missing and not (found and "q" in flags):
        return 2
    return 0 if found else 1


def _grep_regex(patterns: list[str], flags: set) -> re.Pattern:
    alternatives = []
    for pattern in (p for block in patterns for p in block.split("\n")):
        body = re.escape(pattern) if "F" in flags else posix_regex(pattern, "E" in flags)
        if "w" in flags:
            body = rf"(?<!\w)(?:{body})(?!\w)"
        if "x" in flags:
            body = rf"^(?:{body})$"
        alternatives.append(f"(?:{body})")
    return re.compile("|".join(alternatives), re.IGNORECASE if "i" in flags else 0)


def _grep_run(sh, regex, flags, files, io, ctx, missing: list) -> bool:
    found = False
    prefix_names = len(files) > 1 and "h" not in flags or "H" in flags
    for name, text in _sources(sh, files, io, ctx, "grep", missing):
        count = 0
        for number, line in enumerate(_lines(text), 1):
            hit = regex.search(line) is not None
            if hit == ("v" in flags):
                continue
            count += 1
            found = True
            if flags & {"q", "c", "l"}:
                continue
            lead = (f"{name}:" if prefix_names else "") + (f"{number}:" if "n" in flags else "")
            if "o" in flags and "v" not in flags:
                io.out.write("".join(f"{lead}{m.group()}\n" for m in regex.finditer(line) if m.group()))
            else:
                io.out.write(f"{lead}{line}\n")
        if "q" in flags and found:
            return True
        if "c" in flags and "q" not in flags:
            io.out.write((f"{name}:" if prefix_names else "") + f"{count}\n")
        if "l" in flags and count and "q" not in flags:
            io.out.write(f"{name}\n")
    return found


def _count_arg(argv: list[str], default: int) -> tuple[int | None, bool, list[str]]:
    """-n N / -nN / -N / -n +N; (count, counted from the start, file names)."""
    count, from_start, files, args = default, False, [], argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        value = None
        if a == "-n" and i + 1 < len(args):
            value, i = args[i + 1], i + 1
        elif a.startswith("-n") and len(a) > 2:
            value = a[2:]
        elif re.fullmatch(r"-\d+", a):
            value = a[1:]
        elif a.startswith("-") and a != "-":
            return None, False, []
        else:
            files.append(a)
        if value is not None:
            from_start = value.startswith("+")
            if not value.lstrip("+-").isdigit():
                return None, False, []
            count = abs(int(value))
        i += 1
    return count, from_start, files


def head(sh, argv, io, ctx) -> int:
    count, _, files = _count_arg(argv, 10)
    if count is None:
        io.err.write('head: Unknown option (see "head --help")\n')
        return 1
    for _, text in _sources(sh, files, io, ctx, "head"):
        io.out.write("".join(line + "\n" for line in _lines(text)[:count]))
    return 0


def tail(sh, argv, io, ctx) -> int:
    count, from_start, files = _count_arg(argv, 10)
    if count is None:
        io.err.write('tail: Unknown option (see "tail --help")\n')
        return 1
    for _, text in _sources(sh, files, io, ctx, "tail"):
        lines = _lines(text)
        chosen = lines[max(count - 1, 0):] if from_start else (lines[-count:] if count else [])
        io.out.write("".join(line + "\n" for line in chosen))
    return 0


def wc(sh, argv, io, ctx) -> int:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and a != "-") or "lwc"
    files = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    for name, text in _sources(sh, files, io, ctx, "wc"):
        counts = {"l": text.count("\n"), "w": len(text.split()), "c": len(text.encode())}
        values = [str(counts[f]) for f in "lwc" if f in flags]
        io.out.write(" ".join(values) + (f" {name}" if files else "") + "\n")
    return 0


def sort(sh, argv, io, ctx) -> int:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and a != "-")
    files = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    lines = [line for _, text in _sources(sh, files, io, ctx, "sort") for line in _lines(text)]
    if "n" in flags:
        def key(line):
            m = re.match(r"\s*-?\d+(\.\d+)?", line)
            return (float(m.group()) if m else 0.0, line)
    else:
        def key(line):
            return line.lower() if "f" in flags else line
    lines.sort(key=key, reverse="r" in flags)
    if "u" in flags:
        lines = list(dict.fromkeys(lines))
    io.out.write("".join(line + "\n" for line in lines))
    return 0


COMMANDS = {"grep": grep, "head": head, "tail": tail, "wc": wc, "sort": sort}
