"""The assistant through the router: a configured server serves (the footer and the Latency panel
say so), a dead one leaves the device serving with one line saying why."""
from __future__ import annotations

from support import llama_server
import pytest

from agents.assistant import Assistant
from app.routing import build_router
from app.settings import Settings
from app.tui.metrics import footer_text
from engine.events import Done, Notice, Text
from engine.routing.models import DeviceModel, RoutingState, save_state

_MISSING = llama_server.missing()
pytestmark = pytest.mark.slow


def routed(engine, memory, tmp_path, url: str, route: str):
    settings = Settings(max_tokens=12, retrieval=False, route=route,
                        servers={"lab": {"url": url, "price_in": 1e-7, "price_out": 1e-6}})
    # a kept device fit: no measurement in the test
    save_state(tmp_path / "routing.json", RoutingState(DeviceModel(0.005, 0.0, 50.0, "test")))
    router, note = build_router(engine, settings, tmp_path)
    assert router is not None and note == ""
    return Assistant(engine, memory, settings, router)


@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
def test_a_configured_server_serves_and_the_footer_says_so(real_engine, memory, tmp_path):
    with llama_server.running(real_engine.source.path) as url:
        agent = routed(real_engine, memory, tmp_path, url, "server")
        events = list(agent.respond(None, "Name three primary colors."))
    done = [e for e in events if isinstance(e, Done)][-1]
    notes = [e.message for e in events if isinstance(e, Notice)]
    assert done.served_by.startswith("lab ") and done.text and "".join(
        e.delta for e in events if isinstance(e, Text)) == done.text
    assert any(n.startswith("served by lab") for n in notes)
    stored = memory.messages(memory.list_sessions()[0].id)[-1]
    assert stored.role == "assistant" and "served by lab" in footer_text(stored.stats)


def test_a_dead_server_leaves_the_device_serving(real_engine, memory, tmp_path):
    agent = routed(real_engine, memory, tmp_path, f"http://127.0.0.1:{llama_server.free_port()}/v1", "server")
    events = list(agent.respond(None, "Name three primary colors."))
    notes = [e.message for e in events if isinstance(e, Notice)]
    done = [e for e in events if isinstance(e, Done)][-1]
    assert len(notes) == 1 and notes[0].startswith("device serves: server lab") and "\n" not in notes[0]
    assert done.text and done.served_by == ""
    # said once: the next request goes to the device without trying the server again
    events = list(agent.respond(None, "Name three animals."))
    assert not [e for e in events if isinstance(e, Notice)]


@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
def test_the_summarizer_routes_a_document_to_the_server(real_engine, memory, tmp_path):
    from agents.summarizer import Summarizer

    doc = tmp_path / "a.txt"
    doc.write_text("Alice met Bob in Paris on Monday to sign the contract. They agreed on the price.")
    with llama_server.running(real_engine.source.path) as url:
        router = routed(real_engine, memory, tmp_path, url, "server").router
        agent = Summarizer(real_engine, memory, Settings(max_tokens=12), router=router)
        events = list(agent.summarize(None, [agent.ingest(doc).id], "short"))
    done = [e for e in events if isinstance(e, Done)][-1]
    assert done.text and done.served_by.startswith("lab ")
