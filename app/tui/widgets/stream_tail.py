"""The block a streamed answer is still writing, drawn as plain text.

Any change of a widget's height makes Textual lay out the whole screen again: ~50 ms of the UI
thread on a 120x36 screen (measured), and the engine waits for the GIL meanwhile. A tail that grew
by one row at a time did that for every new line and every wrap, ~30 times in a 200-token answer.
So the tail's height grows in steps of ``STEP`` rows, and in between only its text is redrawn.
"""
from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

STEP = 4        # rows reserved at a time: a layout every few lines, a few blank rows at most


class StreamTail(Static):
    def __init__(self, **kwargs) -> None:
        super().__init__("", markup=False, **kwargs)
        self.reserved = 0          # rows the tail takes now

    def _width(self) -> int:
        if self.content_region.width:
            return self.content_region.width
        padding = self.styles.padding
        return max(1, (self.parent.content_region.width if self.parent else 80) - padding.left - padding.right)

    def show(self, text: str) -> None:
        """Draw ``text``; lay the screen out again only when it needs more rows than reserved."""
        rows = Content(text).get_height(self.styles, self._width()) if text else 0
        if rows > self.reserved or not text:
            self.reserved = -(-rows // STEP) * STEP
            self.styles.height = self.reserved or "auto"
        self.update(text, layout=False)
        if self.display != bool(text):
            self.display = bool(text)
