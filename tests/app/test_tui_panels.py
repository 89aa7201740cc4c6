"""The live panels at 120×40 (issue 24's rough edges): the Device panel fits its width whatever
the engine's memory parts are, no scrollbar narrows the panels, the memory figure is live before
any request, and the latency figures are means and honest about short prefills."""
from __future__ import annotations

from app.tui.metrics import RequestMetrics
from app.tui.widgets.panels import DevicePanel, LatencyPanel, Panels
from engine.events import Done, Prefill, Step
from support.fakes import FakeEngine
from support.tui_helpers import chat, hash_memory, make_app, ready


class BigEngine(FakeEngine):
    """A model with a long file name and a large kept KV (the parts that wrapped the panel)."""
    model_name = "SmolLM2-1.7B-Instruct-long-name.Q4_K_M"

    def resident_bytes(self) -> dict[str, int]:
        return {"weights": 1_123_000_000, "kept KV": 273_000_000, "drafter": 12_000_000}


def rendered_lines(widget) -> list[str]:
    return str(widget.render()).splitlines()


async def test_device_panel_fits_at_120x40_and_no_scrollbar_narrows_the_panels(tmp_path):
    app = make_app(BigEngine(), tmp_path, memory_factory=hash_memory)
    app.rss_probe = lambda: 2345.0
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await chat(pilot, "Hi")
        app._probe()
        await pilot.pause()
        device = app.screen.query_one(DevicePanel)
        width = device.content_region.width
        lines = rendered_lines(device)
        assert all(len(line) <= width for line in lines), lines
        assert any("kept KV 273" in line for line in lines), lines        # one piece, never cut
        assert device.content_region.height == len(lines), "a line wrapped"
        panels = app.screen.query_one(Panels)
        assert panels.scrollbar_size_vertical == 0 or panels.max_scroll_y == 0
        assert {p.region.width for p in panels.query(".panel")} == {panels.region.width}


async def test_memory_is_the_live_figure_before_the_first_request(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    rss = [46.0]
    app.rss_probe = lambda: rss[0]
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        rss[0] = 512.0            # the model loaded: what the periodic probe reads
        app._probe()
        await pilot.pause()
        assert "memory   512 MB" in str(app.screen.query_one(DevicePanel).render())


def test_verify_and_draft_are_means_over_the_pass():
    m = RequestMetrics()
    m.feed(Prefill(10, 10, 10, "torch:dynamic", ms=5.0, t=1.0))
    for verify in (10.0, 12.0, 39.65):
        m.feed(Step(3, 2, ("model", "model"), 0.2, verify, t=2.0))
    assert round(m.verify_ms, 2) == round((10 + 12 + 39.65) / 3, 2)
    assert round(m.draft_ms, 2) == 0.2


def test_a_one_token_prefill_shows_its_time_not_a_rate():
    m = RequestMetrics()
    m.feed(Prefill(54, 54, 1, "torch:dynamic", ms=77.0, t=1.0, reused=53))
    assert not m.prefill_rate_shown
    panel = LatencyPanel()
    shown: list[str] = []
    panel.redraw = shown.append          # the text it would draw, without a screen
    panel.show(m, None)
    assert "tok/s  54/54" not in shown[0] and "1 tok 77 ms" in shown[0], shown[0]
    m.feed(Done("eos", "x", (1,), 54, 1, 80.0, 77.0, 13.0, 1.0, 1.0, 1.0, 1, 1.0, reused_tokens=53))
    panel.show(m, None)
    assert "13 tok/s" not in shown[-1]


def test_packing_and_cutting_helpers():
    from app.tui.widgets.panels import middle_cut, packed

    lines = packed(["weights 1123", "kept KV 273", "drafter 12"], " " * 9, 32)
    assert all(len(x) <= 32 for x in lines) and "kept KV 273" in "".join(lines)
    assert middle_cut("SmolLM2-135M-Instruct.Q4_1", 23).endswith("Q4_1") and len(middle_cut("x" * 40, 23)) == 23
