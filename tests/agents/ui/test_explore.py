"""Exploring apps of the virtual phone over a real TCP adb connection: the graph found, nothing
sensitive taken, the phone's data as a real crawl would leave it, and a crawl that resumes."""
from __future__ import annotations

import pytest

from agents.ui.explore import Explorer
from agents.ui.knowledge import Knowledge

pytestmark = pytest.mark.slow

CLOCK = "com.google.android.deskclock"
CONTACTS = "com.google.android.contacts"
MESSAGES = "com.google.android.apps.messaging"


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


def test_exploring_messages_finds_schedule_send_and_sends_nothing(device, phone_server, tmp_path, hash_embedder):
    """Send shows only once there is text: a probe word typed into the empty message box (after
    the rest of the page) brings it up; its long press opens Schedule send, explored down to the
    calendar. Send and Schedule message are seen, never taken; the probe word is erased."""
    from memory import Memory

    phone = phone_server[0]
    before = phone.state()["messages"]["conversations"]
    with Memory.open(tmp_path / "m", embedder=hash_embedder) as memory:
        report = Explorer(device, Knowledge(memory.ui_graphs), budget=800).explore(MESSAGES)
        assert report.finished
        g = Knowledge(memory.ui_graphs).graph(MESSAGES)
        sheet = next(s for s in g.screens.values() if s.title == "Schedule send")
        assert any(e.action == "long_press" and e.dst == sheet.id for e in g.edges.values())
        calendar = [s for s in g.screens.values() if s.entry == "date"]
        assert calendar and any(e.src == calendar[0].id and e.key == "button1" and e.effect == "commit"
                                for e in g.edges.values())
        sends = [e for e in g.edges.values() if e.label in ("Send SMS", "Schedule message") and e.action == "tap"]
        assert sends and all(e.effect == "commit" for e in sends)
        # the recipient box of a new conversation is probed last: its contacts were learned first
        start = next(s for s in g.screens.values() if s.title == "New conversation")
        assert any(e.src == start.id and e.key == "contact_picker_item" and e.effect == "screen"
                   for e in g.edges.values())
    def texts(conversations):       # what was said, and what waits to be sent
        return {c["with"]: ([(m["from_me"], m["text"]) for m in c["messages"]], c.get("scheduled") or [])
                for c in conversations}

    after = texts(phone.state()["messages"]["conversations"])
    old = texts(before)
    # nothing sent, nothing scheduled (opening a contact from Start chat opens an empty conversation,
    # as a real crawl would)
    assert {k: after.get(k) for k, v in old.items() if after.get(k) != v} == {}
    assert all(after[k] == ([], []) for k in after.keys() - old.keys())
    assert "test" not in phone.dump_ui()
