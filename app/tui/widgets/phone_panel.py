"""The phone panel: the screen the agent last read, drawn to scale in the panel's cells.

Every element the agent can act on is a box at its bounds, scaled from the phone's pixels
(1080x2400 on the virtual Pixel) to the panel: tall enough ones get a border, one- or two-row
ones a shaded band (a Settings row is ~1.6 rows at 36 terminal lines). Labels are clipped to
their box, switches say on/off, the element just acted on is highlighted. The app and title sit
on the top row with the step number; the last action on the bottom row.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from agents.ui.prompt import app_name
from agents.ui.screen import Element, Screen

SHADES = (Style(bgcolor="#1d2733"), Style(bgcolor="#28384a"))    # neighbours stay apart
BORDER = Style(color="#6d8aa8")
HIGHLIGHT = Style(color="black", bgcolor="#e0b040", bold=True)
ON, OFF = Style(color="#5fd75f", bold=True), Style(color="#8a8a8a")
EDIT = Style(underline=True, italic=True)
DIM = Style(dim=True)


@dataclass
class _Cell:
    char: str = " "
    style: Style | None = None


def scale_box(bounds: tuple[int, int, int, int], size: tuple[int, int], cols: int, rows: int
              ) -> tuple[int, int, int, int] | None:
    """The cells (row1, col1, row2, col2; ends exclusive) an element covers, at least one cell;
    None when it lies outside the screen. Ends are rounded like starts, so neighbours that
    touch in pixels touch in cells and never overlap."""
    sw, sh = max(1, size[0]), max(1, size[1])
    x1, y1, x2, y2 = bounds
    c1, c2 = round(x1 * cols / sw), round(x2 * cols / sw)
    r1, r2 = round(y1 * rows / sh), round(y2 * rows / sh)
    c1, r1 = max(0, min(c1, cols - 1)), max(0, min(r1, rows - 1))
    c2, r2 = min(cols, max(c2, c1 + 1)), min(rows, max(r2, r1 + 1))
    if x2 <= 0 or y2 <= 0 or x1 >= sw or y1 >= sh:
        return None
    return r1, c1, r2, c2


def same_element(a: Element | None, b: Element) -> bool:
    return a is not None and a.bounds == b.bounds and a.label == b.label


def draw_screen(screen: Screen, cols: int, rows: int, highlight: Element | None = None) -> list[Text]:
    """``rows`` lines of ``cols`` cells: the screen's elements at their scaled bounds."""
    grid = [[_Cell() for _ in range(cols)] for _ in range(rows)]
    if cols <= 0 or rows <= 0:
        return []
    size = screen.size or (1080, 2400)
    order = sorted(enumerate(screen.elements), key=lambda ie: -_area(ie[1].bounds))   # big first
    for i, element in order:
        cells = scale_box(element.bounds, size, cols, rows)
        if cells is not None:
            lit = same_element(highlight, element)
            _draw_element(grid, element, cells, HIGHLIGHT if lit else SHADES[i % 2], lit)
    return [_line(row) for row in grid]


def _draw_element(grid, e: Element, cells, fill: Style, lit: bool) -> None:
    r1, c1, r2, c2 = cells
    boxed = r2 - r1 >= 3 and c2 - c1 >= 4 and not lit
    for r in range(r1, r2):
        for c in range(c1, c2):
            grid[r][c] = _Cell(" ", None if boxed else fill)
    if boxed:
        for c in range(c1, c2):
            grid[r1][c] = _Cell("─", BORDER)
            grid[r2 - 1][c] = _Cell("─", BORDER)
        for r in range(r1, r2):
            grid[r][c1] = _Cell("│", BORDER)
            grid[r][c2 - 1] = _Cell("│", BORDER)
        for (r, c), ch in zip(((r1, c1), (r1, c2 - 1), (r2 - 1, c1), (r2 - 1, c2 - 1)), "┌┐└┘"):
            grid[r][c] = _Cell(ch, BORDER)
        row, left, right, style = r1 + 1, c1 + 1, c2 - 1, None
    else:
        row, left, right, style = r1, c1, c2, fill
    state = ("●on" if e.checked else "○off") if e.checkable else ""
    width = right - left
    if state and width >= len(state) + 2:
        _put(grid, row, right - len(state), state, (ON if e.checked else OFF) + (fill if not boxed else Style()))
        width -= len(state) + 1
    label = e.label if not e.password else "•" * min(8, len(e.label))
    text_style = (style or Style()) + (EDIT if e.editable and not lit else Style())
    _put(grid, row, left, _clip(label, width), text_style)


def _put(grid, row: int, col: int, text: str, style: Style | None) -> None:
    for k, ch in enumerate(text):
        if 0 <= col + k < len(grid[row]):
            grid[row][col + k] = _Cell(ch, style)


def _clip(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return text if len(text) <= width else text[:max(0, width - 1)] + "…"


def _line(row: list[_Cell]) -> Text:
    out = Text(no_wrap=True, overflow="crop")
    for cell in row:
        out.append(cell.char, cell.style)
    return out


def _area(b: tuple[int, int, int, int]) -> int:
    return max(0, b[2] - b[0]) * max(0, b[3] - b[1])


class PhonePanel(Widget):
    """The live phone: ``show`` a new screen, ``acted`` when the agent acted on it."""

    BORDER_TITLE = "Phone"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.phone_screen: Screen | None = None     # (``screen`` is Textual's own attribute)
        self.step = 0
        self.highlight: Element | None = None
        self.last_action = ""
        self.note = "No phone yet: Connect, or start the Virtual phone."
        self.apps: dict[str, str] = {}              # the device's app names, for the header

    def show(self, screen: Screen, step: int) -> None:
        """A new screen. The last element acted on stays lit while it is still there (a switch
        just flipped shows its new state, lit)."""
        self.phone_screen, self.step, self.note = screen, step, ""
        if not any(same_element(self.highlight, e) for e in screen.elements):
            self.highlight = None
        self.refresh()

    def acted(self, element: Element | None, action: str, target: str = "", error: str = "") -> None:
        self.highlight = element
        self.last_action = f"→ {action}" + (f"  {target}" if target else "") + ("  (refused)" if error else "")
        self.refresh()

    def set_note(self, note: str) -> None:
        """A line in place of the screen's bottom row (not connected, disconnected…)."""
        self.note = note
        self.refresh()

    def clear(self) -> None:
        self.phone_screen, self.step, self.highlight, self.last_action = None, 0, None, ""
        self.refresh()

    def render(self) -> Text:
        cols, rows = self.content_size.width, self.content_size.height
        if cols <= 0 or rows <= 0:
            return Text("")
        screen = self.phone_screen
        if screen is None:
            return Text(self.note, style="dim", justify="center")
        step = f" step {self.step}" if self.step else ""
        title = app_name(screen.package, self.apps) + (f" · {screen.title}" if screen.title else "")
        head = Text(_clip(title, cols - len(step)), style="bold", no_wrap=True)
        head.append(" " * max(0, cols - head.cell_len - len(step)))
        head.append(step, style="reverse")
        foot = Text(_clip(self.note or self.last_action, cols), style="red" if self.note else "bold",
                    no_wrap=True)
        body = draw_screen(screen, cols, max(0, rows - 2), self.highlight)
        return Text("\n", no_wrap=True).join([head, *body, foot][:rows])
