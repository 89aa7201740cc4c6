"""The UI agent on the virtual phone over real TCP adb, after exploring its apps: tasks done
through the planner with every step verified, a wrong edge excluded and replanned around (the
episode goes on), the model's choices identical under speculative and plain decoding, and the
agent never touching the virtual phone's state."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.events import Acted, EpisodeEnd
from agents.ui.agent import UIAgent
from agents.ui.explore import Explorer
from agents.ui.knowledge import Knowledge
from agents.ui.options import AgentOptions

pytestmark = pytest.mark.slow

APPS = ("com.google.android.deskclock", "com.google.android.contacts", "com.google.android.apps.messaging")


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """A phone served over TCP and a memory that explored its Clock, Contacts and Messages (once)."""
    from agents.phone.device.phone import VirtualPhone
    from agents.phone.adb.server import PhoneServer
    from agents.ui.adb import AdbConnection
    from agents.ui.device import Device
    from memory import Memory

    root = tmp_path_factory.mktemp("explored")
    phone = VirtualPhone()
    server = PhoneServer(phone, host="127.0.0.1", port=0, auth=False)
    port = server.start()
    device = Device(AdbConnection(f"127.0.0.1:{port}", root / "keys", timeout_s=5.0))
    device.connect()
    memory = Memory.open(root / "data")
    for package in APPS:
        phone.reset()
        Explorer(device, Knowledge(memory.ui_graphs), budget=800).explore(package)
    yield phone, device, memory
    memory.close()
    device.close()
    server.stop()


class Stub:
    model_name = "none"


def episode(agent, task):
    events = list(agent.run(task))
    return [e for e in events if isinstance(e, Acted)], events[-1]


@pytest.mark.parametrize("task, setup, check", [
    ("Set an alarm for 6:47 AM in Google Clock.", {},
     lambda s: any((a["hour"], a["minute"], a["ampm"]) == (6, 47, "AM") for a in s["clock"]["alarms"])),
    ("Could you start a 1 hour 30 minute timer?", {},
     lambda s: s["clock"]["timer"]["set_seconds"] == 5400 and s["clock"]["timer"]["state"] == "running"),
    ("Add John Smith to favorites.", {},
     lambda s: next(c for c in s["contacts"]["list"] if c["last"] == "Smith")["favorite"] is True),
    # a world clock's city is only text on screen: swiped away from inside its line
    ("Take Tokyo off my world clock.", {},
     lambda s: s["clock"]["cities"] == ["New York"]),
    # "weekdays" is five days, each its own toggle in the alarm's card
    ("Make the 8:30 AM alarm also ring on weekdays.", {},
     lambda s: sorted(next(a for a in s["clock"]["alarms"] if a["hour"] == 8)["days"])
     == sorted(["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"])),
    ("Create a new contact named Ana Silva with phone number 555-0142.", {},
     lambda s: any(c["first"] == "Ana" and c["last"] == "Silva" and "0142" in c["phone"]
                   for c in s["contacts"]["list"])),
    # the number's type is a choice the task says: made before the form is saved
    ("Save a new contact, Mira Holt, with work number 415-555-0123.", {},
     lambda s: any(c["first"] == "Mira" and c["last"] == "Holt" and c["phone_label"] == "Work" and "0123" in c["phone"]
                   for c in s["contacts"]["list"])),
    # a detail of someone listed is edited on their contact, not typed into a new one
    ("Set the company for John Smith to Harbor Labs.", {},
     lambda s: [c["company"] for c in s["contacts"]["list"] if c["last"] == "Smith"] == ["Harbor Labs"]),
    # an alarm named by a time that no list showed while exploring: found among the cards
    ("Name the 5:10 AM alarm 'Walk the dog'.",
     {"clock.alarms": [{"hour": 7, "minute": 0, "ampm": "AM", "label": "", "days": [], "on": False, "vibrate": True,
                        "sound": "Default (Cesium)"},
                       {"hour": 5, "minute": 10, "ampm": "AM", "label": "", "days": [], "on": True, "vibrate": True,
                        "sound": "Default (Cesium)"}]},
     lambda s: [a["label"] for a in s["clock"]["alarms"]] == ["", "Walk the dog"]),
    # Schedule send, found by exploring with a probe word in the message box: a long press on Send,
    # the calendar and the clock set, then Schedule message (nothing sent now)
    ("Schedule a text to Emily Chen saying 'Pick up milk' to be sent on June 20 at 6:15 PM.", {},
     lambda s: [c.get("scheduled") for c in s["messages"]["conversations"] if c["with"] == "Emily Chen"]
     == [[{"text": "Pick up milk", "date": "Jun 20", "time": "6:15 PM"}]]),
    # two people named together: each gets the label, the second found after the first is done
    ("Add Priya Patel and Mark Lee to the Family label.", {},
     lambda s: all("Family" in c["labels"] for c in s["contacts"]["list"] if c["last"] in ("Patel", "Lee"))),
    # the label is what is made; the person is looked for, and labelled from their page
    ("Put Hannah Wright in a new label called Climbing.", {},
     lambda s: "Climbing" in s["contacts"]["labels"]
     and next(c for c in s["contacts"]["list"] if c["last"] == "Wright")["labels"] == ["Climbing"]),
])
def test_tasks_done_with_every_step_verified(explored, task, setup, check):
    phone, device, memory = explored
    phone.reset(setup)
    agent = UIAgent(Stub(), memory, device, AgentOptions(policy="planner", verify=True, recall=False),
                    confirm=lambda q: True)
    acted, end = episode(agent, task)
    assert isinstance(end, EpisodeEnd) and end.outcome == "done", [a.action for a in acted]
    assert check(phone.state()) and not any(a.error for a in acted)


def test_a_step_the_phone_refuses_is_not_tried_again(explored):
    phone, device, memory = explored
    phone.reset()
    agent = UIAgent(Stub(), memory, device, AgentOptions(policy="planner", verify=True, recall=False),
                    confirm=lambda q: True)
    acted, end = episode(agent, "Create a new contact named Zoë Ångström.")    # `input text` is ASCII only
    refused = [a for a in acted if a.error]
    assert len(refused) == 1 and "ASCII" in refused[0].error
    assert isinstance(end, EpisodeEnd)


def test_a_form_someone_left_open_is_not_typed_over(explored):
    """Contacts left on John Smith's edit form: asked for a new contact, the agent typed the new
    name over his (found by using the CLI on a phone a previous task left there). It stops instead,
    saying why, and his contact is unchanged."""
    from support.adb_nav import open_pages

    phone, device, memory = explored
    phone.reset()
    open_pages(device, "com.google.android.contacts", "John Smith", "Edit contact")
    before = phone.state()["contacts"]["list"]
    agent = UIAgent(Stub(), memory, device, AgentOptions(policy="planner", verify=True, recall=False),
                    confirm=lambda q: True)
    acted, end = episode(agent, "Save a new contact, Mira Holt, with work number 415-555-0123.")
    assert end.outcome == "refused" and "John" in end.message and not acted
    assert phone.state()["contacts"]["list"] == before


def test_a_step_that_does_not_do_what_it_said_is_excluded_and_replanned(explored):
    phone, device, memory = explored
    phone.reset()
    knowledge = Knowledge(memory.ui_graphs)
    g = knowledge.graph("com.google.android.deskclock")
    # the graph now says "Add alarm" opens the Bedtime tab: a lie the phone will not confirm
    lie = next(e for e in g.edges.values() if e.label == "Add alarm" and e.effect == "dialog")
    truth = lie.dst
    lie.dst = next(s.id for s in g.screens.values() if s.title == "Bedtime")
    agent = UIAgent(Stub(), memory, device, AgentOptions(policy="planner", verify=True, recall=False),
                    confirm=lambda q: True, knowledge=knowledge)
    acted, end = episode(agent, "Set an alarm for 6:20 PM in Google Clock.")
    assert end.outcome == "done" and lie.failed >= 1          # not the end of the episode
    assert any((a["hour"], a["minute"], a["ampm"]) == (6, 20, "PM") for a in phone.state()["clock"]["alarms"])
    lie.dst, lie.failed = truth, 0


def test_the_models_choices_are_the_same_with_speculation_and_without(explored, engine):
    phone, device, memory = explored
    chosen = []
    for method in ("hexa", "vanilla"):
        phone.reset()
        agent = UIAgent(engine, memory, device, AgentOptions(policy="model", method=method, recall=False),
                        confirm=lambda q: True)
        acted, end = episode(agent, "Add John Smith to favorites.")
        chosen.append([a.action for a in acted])
    assert chosen[0] == chosen[1]


def test_the_agent_never_reads_the_virtual_phone():
    root = Path(__file__).resolve().parents[3] / "agents" / "ui"
    for path in root.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "hexa-phone" not in text and "agents.phone" not in text and "harness" not in text, path
