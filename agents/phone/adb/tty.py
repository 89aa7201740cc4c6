"""The interactive ``adb shell`` (service "shell:" with no command): a minimal line discipline.

adbd gives that session a pty, so the phone echoes what is typed, ends lines with CRLF and
prints a prompt; each completed line goes to the shell. Enough for a person at ``adb shell``;
programs should send commands as ``shell:<command>``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..shell.sh import Shell

MAX_LINE = 64 * 1024


class LineSession:
    def __init__(self, shell: Shell, prompt: str):
        self.shell = shell
        self.prompt = prompt
        self.line = bytearray()
        self.variables: dict[str, str] = {}   # one shell process for the whole session

    def greeting(self) -> bytes:
        return self.prompt.encode()

    def feed(self, data: bytes) -> tuple[bytes, bool]:
        """Typed bytes in; (what the terminal shows, whether the session ended) out."""
        out = bytearray()
        for byte in data:
            if byte in (0x0D, 0x0A):                     # Enter
                out += b"\r\n"
                command = self.line.decode("utf-8", "replace")
                self.line.clear()
                if command.strip():
                    result = self.shell.execute(command, self.variables)
                    out += result.output.replace("\n", "\r\n").encode("utf-8", "replace")
                    if result.exited:
                        return bytes(out), True
                out += self.prompt.encode()
            elif byte in (0x7F, 0x08):                   # Backspace
                if self.line:
                    self.line = bytearray(self.line.decode("utf-8", "replace")[:-1].encode())
                    out += b"\b \b"
            elif byte == 0x03:                           # Ctrl-C drops the line
                self.line.clear()
                out += b"^C\r\n" + self.prompt.encode()
            elif byte == 0x04 and not self.line:         # Ctrl-D on an empty line
                return bytes(out), True
            elif byte >= 0x20 or byte == 0x09:
                if len(self.line) < MAX_LINE:
                    self.line.append(byte)
                    out.append(byte)
        return bytes(out), False
