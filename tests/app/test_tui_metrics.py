from app.tui.metrics import Metrics, footer_text
from engine.events import Done, Prefill, Step, Text


def test_metrics_from_events_only():
    m = Metrics()
    m.begin("hexa")
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
    assert footer_text({"new_tokens": 4, "mean_accepted": 2.0, "ttft_ms": 150.0, "decode_tok_s": 40.0,
                        "ms_per_token": 25.0, "method": "hexa", "stop_reason": "max_tokens"}) == \
        "4 tok · 2.00 acc/step · TTFT 150 ms · 40.0 tok/s · 25.0 ms/tok · hexa · max_tokens"
