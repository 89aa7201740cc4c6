"""The parser of the phone's ``sh``: the POSIX subset an adb client's command lines use.

Quoting as in sh: '…' is literal; "…" keeps \\" \\\\ \\$ \\` (and line continuations) escaped and
expands $VAR, ${VAR}, $(…) and `…`; an unquoted backslash quotes the next character.
Operators: ; & && || | and newlines; redirections [n]> [n]>> [n]< [n]>&m.
Compound commands (if, for, while, case, ( … ), { …; }), globbing and here-documents are not
supported: they are syntax errors here, so nothing of such a line runs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

META = set(" \t\n;&|<>()")
RESERVED = {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until",
            "for", "{", "}", "[[", "]]", "function", "select", "time"}
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SPECIAL_VARS = set("?$#0123456789!@*-")


class ShSyntaxError(Exception):
    """Printed by the shell as ``/system/bin/sh: <message>``."""


# -- the tree ---------------------------------------------------------------------------------
@dataclass
class Lit:
    text: str
    quoted: bool


@dataclass
class Var:
    name: str
    quoted: bool


@dataclass
class Sub:
    body: list          # list[AndOr]: the commands of $(…) or `…`
    quoted: bool


Word = list  # of Lit | Var | Sub


@dataclass
class Redirect:
    fd: int
    op: str             # ">", ">>", "<", ">&", "<&"
    target: Word


@dataclass
class Simple:
    assigns: list = field(default_factory=list)   # (name, Word)
    words: list = field(default_factory=list)     # Word
    redirects: list = field(default_factory=list)


@dataclass
class Pipeline:
    commands: list      # Simple
    negate: bool = False


@dataclass
class AndOr:
    first: Pipeline
    rest: list = field(default_factory=list)      # ("&&" | "||", Pipeline)


# -- the parser -------------------------------------------------------------------------------
class Parser:
    def __init__(self, text: str, pos: int = 0):
        self.s = text
        self.i = pos

    def peek(self, n: int = 1) -> str:
        return self.s[self.i:self.i + n]

    def skip_blanks(self, newlines: bool = False) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t" or (newlines and c == "\n"):
                self.i += 1
            elif self.s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            else:
                return

    def unexpected(self) -> ShSyntaxError:
        c = self.peek()
        if not c:
            return ShSyntaxError("syntax error: unexpected EOF")
        token = self.peek(2) if self.peek(2) in ("&&", "||", ";;", ">>", ">&", "<<", "<&") else c
        return ShSyntaxError("syntax error: '%s' unexpected" % ("newline" if token == "\n" else token))

    def next_line(self) -> list | None:
        """The commands of the next line (sh runs a script line by line: an error on a later
        line does not stop the earlier ones); None at the end of the text."""
        self.skip_blanks()
        if self.i >= len(self.s):
            return None
        return self.parse_list(closing=None)

    def parse_list(self, closing: str | None) -> list:
        items: list[AndOr] = []
        while True:
            self.skip_blanks(newlines=closing is not None)
            c = self.peek()
            if not c:
                if closing is not None:
                    raise ShSyntaxError("syntax error: unexpected EOF (missing ')')")
                return items
            if c == closing:
                self.i += 1
                return items
            if c == "\n" and closing is None:
                self.i += 1
                return items
            items.append(self.parse_and_or())
            self.skip_blanks()
            c = self.peek()
            if c in (";", "&") and self.peek(2) not in (";;", "&&"):
                self.i += 1
            elif c and c != "\n" and c != closing:
                raise self.unexpected()

    def parse_and_or(self) -> AndOr:
        node = AndOr(self.parse_pipeline())
        while True:
            self.skip_blanks()
            op = self.peek(2)
            if op not in ("&&", "||"):
                return node
            self.i += 2
            self.skip_blanks(newlines=True)
            node.rest.append((op, self.parse_pipeline()))

    def parse_pipeline(self) -> Pipeline:
        self.skip_blanks()
        negate = False
        if self.peek() == "!" and self.peek(2)[1:] in (" ", "\t"):
            negate = True
            self.i += 1
        pipe = Pipeline([self.parse_simple()], negate)
        while True:
            self.skip_blanks()
            if self.peek() != "|" or self.peek(2) == "||":
                return pipe
            self.i += 1
            self.skip_blanks(newlines=True)
            pipe.commands.append(self.parse_simple())

    def parse_simple(self) -> Simple:
        cmd = Simple()
        while True:
            self.skip_blanks()
            c = self.peek()
            if not c or c in ";&|\n)":
                break
            if c == "(":
                raise self.unexpected()
            m = re.match(r"\d*[<>]", self.s[self.i:])
            if m:
                cmd.redirects.append(self.parse_redirect())
                continue
            start = self.i
            word = self.parse_word()
            raw = self.s[start:self.i]
            if not cmd.words and raw in RESERVED:
                self.i = start
                raise ShSyntaxError(f"syntax error: '{raw}' unexpected")
            assign = NAME.match(raw)
            if (not cmd.words and assign and raw[assign.end():assign.end() + 1] == "="
                    and word and isinstance(word[0], Lit) and not word[0].quoted):
                cmd.assigns.append((assign.group(), self.strip_name(word, assign.end() + 1)))
            else:
                cmd.words.append(word)
        if not (cmd.words or cmd.assigns or cmd.redirects):
            raise self.unexpected()
        return cmd

    @staticmethod
    def strip_name(word: Word, count: int) -> Word:
        """The value part of NAME=value (the name and "=" are unquoted literal characters)."""
        out: Word = []
        for part in word:
            if count and isinstance(part, Lit) and not part.quoted:
                take = min(count, len(part.text))
                count -= take
                if part.text[take:]:
                    out.append(Lit(part.text[take:], False))
            else:
                out.append(part)
        return out

    def parse_redirect(self) -> Redirect:
        m = re.match(r"(\d*)(>>|>&|>\||<&|<<|>|<)", self.s[self.i:])
        assert m
        if m.group(2) == "<<":
            raise ShSyntaxError("here-documents are not supported")
        fd = int(m.group(1)) if m.group(1) else (0 if m.group(2)[0] == "<" else 1)
        self.i += m.end()
        self.skip_blanks()
        target = self.parse_word()
        if not target:
            raise self.unexpected()
        op = ">" if m.group(2) == ">|" else m.group(2)
        return Redirect(fd, op, target)

    def parse_word(self) -> Word:
        parts: Word = []
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in META:
                break
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                elif self.i + 1 < len(s):
                    parts.append(Lit(s[self.i + 1], True))
                    self.i += 2
                else:
                    parts.append(Lit("\\", True))
                    self.i += 1
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ShSyntaxError("no closing quote")
                parts.append(Lit(s[self.i + 1:end], True))
                self.i = end + 1
            elif c == '"':
                self.parse_double_quoted(parts)
            elif c == "$":
                parts.append(self.parse_dollar(quoted=False))
            elif c == "`":
                parts.append(self.parse_backquoted(quoted=False))
            else:
                parts.append(Lit(c, False))
                self.i += 1
        return merge(parts)

    def parse_double_quoted(self, parts: Word) -> None:
        s = self.s
        self.i += 1
        parts.append(Lit("", True))   # "" is an (empty) argument of its own
        while True:
            if self.i >= len(s):
                raise ShSyntaxError("no closing quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    parts.append(Lit(s[self.i + 1], True))
                self.i += 2
            elif c == "$":
                parts.append(self.parse_dollar(quoted=True))
            elif c == "`":
                parts.append(self.parse_backquoted(quoted=True))
            else:
                parts.append(Lit(c, True))
                self.i += 1

    def parse_dollar(self, quoted: bool):
        s = self.s
        nxt = s[self.i + 1:self.i + 2]
        if nxt == "(":
            self.i += 2
            return Sub(self.parse_list(closing=")"), quoted)
        if nxt == "{":
            end = s.find("}", self.i + 2)
            name = s[self.i + 2:end] if end >= 0 else ""
            if end < 0 or not (NAME.fullmatch(name) or name in SPECIAL_VARS):
                raise ShSyntaxError(f"{s[self.i:end + 1 if end >= 0 else len(s)]}: bad substitution")
            self.i = end + 1
            return Var(name, quoted)
        m = NAME.match(s, self.i + 1)
        if m:
            self.i = m.end()
            return Var(m.group(), quoted)
        if nxt and nxt in SPECIAL_VARS:
            self.i += 2
            return Var(nxt, quoted)
        self.i += 1
        return Lit("$", quoted)

    def parse_backquoted(self, quoted: bool) -> Sub:
        s = self.s
        i = self.i + 1
        body = []
        escapable = '$`\\"' if quoted else "$`\\"
        while True:
            if i >= len(s):
                raise ShSyntaxError("no closing quote")
            c = s[i]
            if c == "`":
                break
            if c == "\\" and i + 1 < len(s) and s[i + 1] in escapable:
                body.append(s[i + 1])
                i += 2
            else:
                body.append(c)
                i += 1
        self.i = i + 1
        return Sub(parse_script("".join(body)), quoted)


def merge(parts: Word) -> Word:
    """Adjacent literals of the same quoting as one."""
    out: Word = []
    for part in parts:
        if out and isinstance(part, Lit) and isinstance(out[-1], Lit) and out[-1].quoted == part.quoted:
            out[-1] = Lit(out[-1].text + part.text, part.quoted)
        else:
            out.append(part)
    return out


def parse_script(text: str) -> list:
    """All the commands of ``text`` (for `…`, whose body is parsed as a whole)."""
    parser = Parser(text)
    items: list = []
    while (line := parser.next_line()) is not None:
        items.extend(line)
    return items
