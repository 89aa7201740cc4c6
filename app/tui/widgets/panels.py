"""Live panels beside every mode: acceptance, latency, device. They render one screen's
``RequestMetrics`` and the app's ``DeviceInfo``; at 40 rows all three fit without scrolling."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.content import Content
from textual.containers import VerticalScroll
from textual.widgets import Sparkline, Static

from ..metrics import SPARK_STEPS, DeviceInfo, RequestMetrics

BAR = "█"
HIST_ROWS = 6          # accepted lengths 1..5 and "6+": enough to see the shape, short enough to fit


class Lines(Static):
    """A block of panel lines. A redraw asks for a layout (a reflow of the whole screen, tens of
    ms) only when the rows it takes change (a line that grows past the panel's width wraps): most
    redraws only change figures."""

    rows = 0

    def redraw(self, content: str | Text) -> None:
        visual = Content.from_rich_text(content) if isinstance(content, Text) else Content.from_markup(content)
        width = self.content_region.width
        rows = visual.get_height(self.styles, width) if width else -1     # not laid out yet
        self.update(visual, layout=rows != self.rows)
        self.rows = rows


def _bar(frac: float, width: int = 10) -> str:
    n = round(max(0.0, min(1.0, frac)) * width)
    return BAR * n + "·" * (width - n)


def histogram_rows(histogram) -> list[tuple[str, int]]:
    """(label, count) for every accepted length, 0 included (the panel keeps its height, so its
    redraws never lay the screen out); lengths past the last row are counted together."""
    rows = {str(n) if n < HIST_ROWS else f"{HIST_ROWS}+": 0 for n in range(1, HIST_ROWS + 1)}
    for length in sorted(histogram):
        label = str(length) if length < HIST_ROWS else f"{HIST_ROWS}+"
        rows[label] += histogram[length]
    return list(rows.items())


class AcceptancePanel(Static):
    BORDER_TITLE = "Acceptance"

    def compose(self) -> ComposeResult:
        yield Lines(id="acc-figures")
        yield Sparkline([0], id="acc-spark")
        yield Lines(id="acc-hist")
        yield Lines(id="acc-sources")

    def show(self, m: RequestMetrics, device: DeviceInfo) -> None:
        self.query_one("#acc-figures", Lines).redraw(
            f"step   [b]{m.last_accepted}[/b] accepted\n"
            f"mean   [b]{m.mean_accepted:.2f}[/b]/step ({m.steps} steps)")
        spark = self.query_one("#acc-spark", Sparkline)
        # no steps yet: a base line (hiding it laid the screen out twice a request)
        spark.data = list(m.recent)
        spark.tooltip = f"accepted tokens, last {SPARK_STEPS} steps"
        hist = Text("accepted length", style="dim")
        rows = histogram_rows(m.histogram)
        top = max((count for _, count in rows), default=0) or 1
        for label, count in rows:
            hist.append(f"\n{label:>3} {_bar(count / top)} {count}", style="")
        self.query_one("#acc-hist", Lines).redraw(hist)
        src = Text("token sources", style="dim")
        for name, count, share in m.source_shares():
            src.append(f"\n{name:<10} {_bar(share, 6)} {count}", style="")
        self.query_one("#acc-sources", Lines).redraw(src)


class LatencyPanel(Lines):
    BORDER_TITLE = "Latency"

    def show(self, m: RequestMetrics, device: DeviceInfo) -> None:
        ttft = f"{m.ttft_ms:.0f} ms" if m.ttft_ms is not None else "-"
        if m.prefill_rate_shown or not m.prefill_ms:
            prefill = f"{m.prefill_tok_s:.0f} tok/s"
        else:        # a few tokens: their time, a rate would be noise
            prefill = f"{m.prefill_fed} tok {m.prefill_ms:.0f} ms"
        lines = [
            f"TTFT      {ttft}",
            f"prefill   {prefill}  {m.prefill_done}/{m.prefill_total}",
            f"          reused {m.prefill_reused} tok",     # always: a line that comes and goes lays the screen out
            f"decode    {m.decode_tok_s:.1f} tok/s",
            f"          {m.ms_per_token:.1f} ms/token",
            f"draft     {m.draft_ms:.2f} ms/step",
            f"verify    {m.verify_ms:.2f} ms/step",
        ]
        served = getattr(m.done, "served_by", "") if m.done is not None else ""
        if served:   # routed: which endpoint served each part, and any migration
            lines.append(f"served    {served}")
        if m.total_blocks:
            lines.append(f"graphs    {_bar(m.switched / m.total_blocks, 8)} {m.switched}/{m.total_blocks}")
            lines.append(f"exposed   {m.exposed_load_ms:.1f} ms load")
        self.redraw("\n".join(lines))


def middle_cut(text: str, width: int) -> str:
    """``text`` in ``width`` cells, cut in the middle (a model's quant type is at its end)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def packed(items: list[str], indent: str, width: int) -> list[str]:
    """``items`` on as few lines as fit ``width``, never split inside an item ("kept KV 273" cut
    over two lines is what overflowed the panel)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            lines.append(indent + item)
    return lines


PANEL_TEXT = 32       # text cells inside a panel (#panels is 36 wide: border and padding take 4)


class DevicePanel(Lines):
    BORDER_TITLE = "Device"

    def show(self, m: RequestMetrics, device: DeviceInfo) -> None:
        method = device.method or "-"
        kind = "vanilla" if method == "vanilla" else f"speculative ({method})"
        width = self.content_region.width or PANEL_TEXT
        self.tooltip = device.model if len(device.model) > width - 9 else None
        memory = f"{device.rss_mb:.0f} MB" if device.rss_mb else "-"
        if device.child_mb:      # app and engine process together; the engine's part
            memory += f" (engine {device.child_mb:.0f})"
        elif device.engine_mb:   # the engine's own part of it
            memory += f" (engine {sum(device.engine_mb.values()):.0f})"
        lines = [f"model    {middle_cut(device.model, width - 9)}", f"backend  {device.backend}",
                 f"decoding {middle_cut(kind, width - 9)}", f"memory   {memory}"]
        if device.engine_mb:
            lines += packed([f"{k} {v:.0f}" for k, v in device.engine_mb.items()], " " * 9, width)
        if device.memory:
            lines.append(f"[yellow]store    {device.memory}[/yellow]")
        self.redraw("\n".join(lines))


class Panels(VerticalScroll):
    """The three panels; ``show`` re-renders them."""

    def compose(self) -> ComposeResult:
        yield AcceptancePanel(classes="panel")
        yield LatencyPanel(classes="panel")
        yield DevicePanel(classes="panel")

    def show(self, m: RequestMetrics, device: DeviceInfo) -> None:
        for panel in self.query(".panel"):
            panel.show(m, device)  # type: ignore[attr-defined]
