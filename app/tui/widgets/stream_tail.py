"""The block a streamed answer is still writing, drawn as plain text.

Any change of a widget's height makes Textual lay out the whole screen again: 15-50 ms of the UI
thread, more as the session grows (measured), time taken from the engine's two cores. A tail that
grew by one row at a time did that for every new line and every wrap, ~30 times in a 200-token
answer; grown four rows at a time and refitted whenever finished blocks left it, it still made 39
of the 149 layouts of a six-answer session (an app process using 32% of a core). So while an
answer streams the tail only grows, twice at most: to ``STEP`` rows, then to its most rows, and
in between only its text is redrawn. Blocks that leave it leave blank rows below the text until
the answer ends.

The tail wraps its own text, one finished line once and only the line being written on every
frame; Textual then draws the rows as they are (``text-wrap: nowrap``). Wrapping the whole tail
twice a frame (to measure it, then to draw it) was the largest single cost of a frame (1.6 ms).
"""
from __future__ import annotations

from rich.cells import cell_len, chop_cells
from textual.widgets import Static

STEP = 4        # rows reserved at a time: a layout every few lines, a few blank rows at most


def wrap(line: str, width: int) -> list[str]:
    """Greedy word wrap of one line into rows of at most ``width`` cells (words longer than a row
    are cut). Rows before the last never change when text is appended to the line."""
    if not line:
        return [""]
    rows: list[str] = []
    row, row_cells = "", 0
    for word in _words(line):
        cells = cell_len(word)
        if row_cells + cells <= width:
            row, row_cells = row + word, row_cells + cells
            continue
        if row.strip():
            rows.append(row.rstrip())
        word = word.lstrip() if row.strip() else word
        while cell_len(word) > width:
            head = chop_cells(word, width)[0] or word[0]
            rows.append(head)
            word = word[len(head):]
        row, row_cells = word, cell_len(word)
    rows.append(row.rstrip() if rows else row)
    return rows


def _words(line: str):
    """Each word with the spaces in front of it."""
    start = 0
    n = len(line)
    while start < n:
        end = start
        while end < n and line[end] == " ":
            end += 1
        while end < n and line[end] != " ":
            end += 1
        yield line[start:end]
        start = end


class StreamTail(Static):
    """Shows at most ``MAX_SHARE`` of its container's height: a longer block (a list with no blank
    line between its items, say) shows its last rows until it is finished."""

    DEFAULT_CSS = "StreamTail { text-wrap: nowrap; text-overflow: clip; }"
    MAX_SHARE = 0.6

    def __init__(self, **kwargs) -> None:
        super().__init__("", markup=False, **kwargs)
        self.reserved = 0          # rows the tail takes now
        self._lines: list[str] = []     # finished lines of the text drawn last ...
        self._rows: list[str] = []      # ... and their rows
        self._width_drawn = 0
        self._last: tuple[str, int, list[str]] = ("", 0, [])

    def _width(self) -> int:
        if self.content_region.width:
            return self.content_region.width
        padding = self.styles.padding
        return max(1, (self.parent.content_region.width if self.parent else 80) - padding.left - padding.right)

    def rows(self, text: str) -> list[str]:
        """``text`` wrapped to the tail's width; finished lines are wrapped only once, and the same
        text asked for again (``fits`` then ``show`` in one frame) is not wrapped again."""
        width = self._width()
        if (text, width) == self._last[:2]:
            return self._last[2]
        rows = self._wrap(text, width)
        self._last = (text, width, rows)
        return rows

    def _wrap(self, text: str, width: int) -> list[str]:
        *finished, current = text.split("\n")
        if width != self._width_drawn or finished[:len(self._lines)] != self._lines:
            self._lines, self._rows, self._width_drawn = [], [], width
        for line in finished[len(self._lines):]:
            self._lines.append(line)
            self._rows.extend(wrap(line, width))
        return self._rows + wrap(current, width)

    def max_rows(self) -> int:
        height = self.parent.content_region.height if self.parent else 24
        return max(STEP, int(height * self.MAX_SHARE) // STEP * STEP)

    def fits(self, text: str) -> bool:
        """``text`` can be drawn in the rows reserved now (no layout)."""
        return len(self.rows(text)) <= self.reserved

    @property
    def full(self) -> bool:
        """The tail takes the most rows it may: a longer text shows its last rows."""
        return self.reserved >= self.max_rows()

    def show(self, text: str) -> None:
        """Draw ``text`` (its last rows if it is taller than the tail may be); lay the screen out
        again only when it needs more rows than reserved or the terminal got shorter than them.
        Empty text keeps the rows: the answer goes on."""
        most = self.max_rows()
        rows = self.rows(text)[-most:]
        if len(rows) > self.reserved or self.reserved > most:
            self.reserved = STEP if len(rows) <= STEP else most
            self.styles.height = self.reserved
        self.update("\n".join(rows), layout=False)
        if not self.display:
            self.display = True

    def clear(self) -> None:
        """The answer ended: the tail gives its rows back."""
        self.reserved = 0
        self.styles.height = "auto"
        self.update("", layout=False)
        self.display = False
