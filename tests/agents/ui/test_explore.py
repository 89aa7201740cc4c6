"""Exploring apps of the virtual phone over a real TCP adb connection: the graph found, nothing
sensitive taken, the phone's data as a real crawl would leave it, and a crawl that resumes."""
from __future__ import annotations

import pytest

from agents.ui.explore import Explorer
from agents.ui.knowledge import Knowledge

pytestmark = pytest.mark.slow

CLOCK = "com.google.android.deskclock"
CONTACTS = "com.google.android.contacts"


def test_exploring_clock_finds_its_screens_and_leaves_its_alarms(device, phone_server, tmp_path, hash_embedder):
    from memory import Memory

    phone = phone_server[0]
    before = phone.state()
    with Memory.open(tmp_path / "m", embedder=hash_embedder) as memory:
        knowledge = Knowledge(memory.ui_graphs)
        seen = []
        report = Explorer(device, knowledge, budget=600, progress=seen.append).explore(CLOCK)
        assert report.finished and report.actions <= 650 and seen
        g = Knowledge(memory.ui_graphs).graph(CLOCK)           # as stored, read back
        kinds = {s.kind for s in g.screens.values()}
        assert {"screen", "dialog"} <= kinds and len(g.screens) >= 8
        assert any(s.entry == "time" for s in g.screens.values())       # the alarm's time picker
        assert any(s.entry == "digits" for s in g.screens.values())     # the timer's keypad
        commits = [e for e in g.edges.values() if e.effect == "commit"]
        assert any("delete" in e.sensitive for e in commits)            # seen, not taken
        assert any(e.key == "button1" and e.sensitive == "confirms" for e in commits)
    after = phone.state()
    # no alarm was deleted, added or moved; no city left the world clock (learning what a row of
    # the city picker does adds that city, as a real crawl would)
    assert [(a["hour"], a["minute"], a["ampm"], a["label"]) for a in after["clock"]["alarms"]] == \
        [(a["hour"], a["minute"], a["ampm"], a["label"]) for a in before["clock"]["alarms"]]
    assert after["clock"]["cities"][:len(before["clock"]["cities"])] == before["clock"]["cities"]


def test_exploring_contacts_deletes_nobody_and_resumes(device, phone_server, tmp_path, hash_embedder):
    from memory import Memory

    phone = phone_server[0]
    before = phone.state()["contacts"]["list"]
    with Memory.open(tmp_path / "m", embedder=hash_embedder) as memory:
        first = Explorer(device, Knowledge(memory.ui_graphs), budget=60).explore(CONTACTS)
        assert not first.finished and first.actions >= 60
        screens = len(Knowledge(memory.ui_graphs).graph(CONTACTS).screens)
        rest = Explorer(device, Knowledge(memory.ui_graphs), budget=800).explore(CONTACTS)
        g = Knowledge(memory.ui_graphs).graph(CONTACTS)
        assert rest.finished and len(g.screens) > screens and rest.new_screens == len(g.screens) - screens
        assert memory.ui_graphs.apps()[0]["info"]["actions"] == first.actions + rest.actions
        titles = {s.title for s in g.screens.values()}
        assert "Create contact" in titles
        delete = [e for e in g.edges.values() if e.label == "Delete"]
        assert delete and all(e.effect == "commit" for e in delete)   # never confirmed
    after = phone.state()["contacts"]["list"]
    assert [c["id"] for c in after] == [c["id"] for c in before]
    assert [(c["first"], c["last"], c["phone"], c["email"]) for c in after] == \
        [(c["first"], c["last"], c["phone"], c["email"]) for c in before]
