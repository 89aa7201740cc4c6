from app.tui.metrics import RequestMetrics, footer_text
from memory import ResponseStats
from app.tui.widgets.panels import histogram_rows
from engine.events import Done, Prefill, Step, Text


def test_metrics_from_events_only():
    m = RequestMetrics()
    m.feed(Prefill(100, 100, 100, "torch:dynamic", switched_blocks=2, total_blocks=4, ms=50.0, t=10.0))
    m.feed(Step(4, 3, ("context", "context", "model"), 0.5, 20.0, t=10.1))
    m.feed(Text("abc", t=10.1))
    m.feed(Step(2, 1, ("model",), 0.5, 20.0, t=10.2))
    assert m.last_accepted == 1 and m.mean_accepted == 2.0 and m.histogram == {3: 1, 1: 1}
    assert m.sources["context"] == 2 and m.sources["model"] == 2
    assert round(m.ttft_ms) == 150 and m.prefill_tok_s == 2000.0
    assert round(m.decode_tok_s) == 30 and (m.switched, m.total_blocks) == (2, 4)
    m.feed(Done("eos", "abcd", (1, 2, 3, 4), 100, 4, 150.0, 50.0, 2000.0, 100.0, 40.0, 25.0, 2, 2.0))
    assert m.decode_tok_s == 40.0
    assert footer_text(ResponseStats(new_tokens=4, mean_accepted=2.0, ttft_ms=150.0, decode_tok_s=40.0,
                                     ms_per_token=25.0, method="hexa", stop_reason="max_tokens")) == \
        "4 tok · 2.00 acc/step · TTFT 150 ms · 40.0 tok/s · 25.0 ms/tok · hexa · token limit (F5 continues)"


def test_the_mean_counts_every_step_and_the_sparkline_the_recent_ones():
    m = RequestMetrics()
    for i in range(200):
        m.feed(Step(3, 1 + i % 3, ("model",), 0.1, 1.0, t=float(i)))
    assert m.steps == 200 and m.mean_accepted == sum(1 + i % 3 for i in range(200)) / 200
    assert sum(m.histogram.values()) == 200 and len(m.recent) < 200


def test_a_new_pass_starts_the_figures_over():
    m = RequestMetrics()
    m.feed(Prefill(64, 64, 64, "torch:dynamic", ms=10.0, t=1.0))
    m.feed(Step(1, 5, ("context",) * 4 + ("model",), 0.1, 1.0, t=1.1))
    m.feed(Prefill(64, 128, 64, "torch:dynamic", ms=10.0, t=2.0))     # next part of a summary
    assert m.steps == 0 and m.histogram == {} and m.prefill_total == 128


def test_histogram_folds_long_runs_into_one_row():
    assert histogram_rows({1: 4, 2: 1, 7: 2, 9: 1}) == [("1", 4), ("2", 1), ("3", 0), ("4", 0), ("5", 0), ("6+", 3)]
    assert [count for _, count in histogram_rows({})] == [0] * 6       # the same rows before any step
