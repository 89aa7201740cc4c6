"""Live panels beside every mode: acceptance, latency, device. They render an ``app.metrics``."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Sparkline, Static

from ..metrics import Metrics

BAR = "█"


def _bar(frac: float, width: int = 10) -> str:
    n = round(max(0.0, min(1.0, frac)) * width)
    return BAR * n + "·" * (width - n)


class AcceptancePanel(Static):
    BORDER_TITLE = "Acceptance"

    def compose(self) -> ComposeResult:
        yield Static(id="acc-figures")
        yield Sparkline([0], id="acc-spark")
        yield Static(id="acc-hist")
        yield Static(id="acc-sources")

    def show(self, m: Metrics) -> None:
        self.query_one("#acc-figures", Static).update(
            f"step   [b]{m.last_accepted}[/b] accepted\n"
            f"mean   [b]{m.mean_accepted:.2f}[/b] / step  ({len(m.steps)} steps)")
        spark = self.query_one("#acc-spark", Sparkline)
        spark.data = list(m.steps) or [0]
        spark.display = bool(m.steps)   # a flat line of zeros renders as a solid block: hide it
        hist = Text("accepted length\n", style="dim")
        top = max(m.histogram.values(), default=0) or 1
        for length in sorted(m.histogram)[:8]:
            hist.append(f"{length:>3} {_bar(m.histogram[length] / top)} {m.histogram[length]}\n")
        self.query_one("#acc-hist", Static).update(hist)
        src = Text("token sources\n", style="dim")
        for name, count, share in m.source_shares():
            src.append(f"{name:<10} {_bar(share, 6)} {count}\n")
        self.query_one("#acc-sources", Static).update(src)


class LatencyPanel(Static):
    BORDER_TITLE = "Latency"

    def show(self, m: Metrics) -> None:
        ttft = f"{m.ttft_ms:.0f} ms" if m.ttft_ms is not None else "-"
        lines = [
            f"TTFT      {ttft}",
            f"prefill   {m.prefill_tok_s:.0f} tok/s",
            f"          {m.prefill_done}/{m.prefill_total} tokens",
            f"decode    {m.decode_tok_s:.1f} tok/s",
            f"          {m.ms_per_token:.1f} ms/token",
            f"draft     {m.draft_ms:.2f} ms/step",
            f"verify    {m.verify_ms:.2f} ms/step",
        ]
        if m.total_blocks:
            lines.append(f"graphs    {_bar(m.switched / m.total_blocks, 8)} {m.switched}/{m.total_blocks}")
            lines.append(f"exposed   {m.exposed_load_ms:.1f} ms load")
        self.update("\n".join(lines))


class DevicePanel(Static):
    BORDER_TITLE = "Device"

    def show(self, m: Metrics) -> None:
        method = m.method or "-"
        kind = "vanilla" if method == "vanilla" else f"speculative ({method})"
        self.update(f"model    {m.model}\nbackend  {m.backend}\ndecoding {kind}\n"
                    f"memory   {m.rss_mb:.0f} MB")


class Panels(VerticalScroll):
    """The three panels; ``show`` re-renders them from the metrics."""

    def compose(self) -> ComposeResult:
        yield AcceptancePanel(classes="panel")
        yield LatencyPanel(classes="panel")
        yield DevicePanel(classes="panel")

    def on_mount(self) -> None:
        self.show(self.app.metrics)  # type: ignore[attr-defined]

    def show(self, m: Metrics) -> None:
        for panel in self.query(".panel"):
            panel.show(m)  # type: ignore[attr-defined]
