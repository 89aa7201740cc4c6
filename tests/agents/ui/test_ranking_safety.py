"""Ranking elements against the task; the confirmation gate; loop detection; prompt examples."""
from __future__ import annotations

from agents.ui import prompt
from agents.ui.actions import Action
from agents.ui.ranking import Ranker, named
from agents.ui.safety import LoopGuard, confirmation_needed
from agents.ui.screen import Element, parse_dump
from support.ui_samples import BLUETOOTH, settings_page


def words_embed(texts):
    """A bag-of-words embedder: enough to rank by shared words, deterministic."""
    bags = [t.lower().replace(",", " ").split() for t in texts]
    vocab = sorted({w for bag in bags for w in bag})
    return [[bag.count(w) for w in vocab] for bag in bags]


def test_elements_like_the_task_come_first_and_named_ones_are_never_cut():
    rows = [(f"Option {i}", "", None) for i in range(20)] + [("Battery", "", None), ("Connected devices", "Bluetooth, pairing", None)]
    screen = parse_dump(settings_page("Settings", rows))
    ranked = Ranker(words_embed).rank("Turn off Bluetooth", screen.elements, limit=3)
    assert ranked[0].label == "Connected devices"
    assert len(ranked) == 3
    named_kept = Ranker(None).rank("Check the Battery usage", screen.elements, limit=2)
    assert [e.label for e in named_kept] == ["Battery", "Option 0"]


def test_named_matches_whole_words_only():
    assert named("Set a timer for 5 seconds", Element(text="Timer"))
    assert not named("Set a timer", Element(text="Time"))


def test_sensitive_actions_need_a_yes():
    shown = [Element(text="Delete", clickable=True), Element(text="Alarm", clickable=True),
             Element(text="", rid="password", editable=True, password=True, cls="EditText")]
    assert "delete" in confirmation_needed(Action("tap", 1), shown)
    assert confirmation_needed(Action("tap", 2), shown) is None
    assert "password" in confirmation_needed(Action("type", 3, "x"), shown)
    assert confirmation_needed(Action("back"), shown) is None


def test_loop_guard():
    guard = LoopGuard(3)
    assert not guard.looping("s", Action("tap", 1))
    assert not guard.looping("s2", Action("tap", 1))
    assert not guard.looping("s", Action("tap", 1))
    assert guard.looping("s", Action("tap", 1))


def test_examples_are_this_screen_from_similar_episodes_renumbered():
    from memory.episodes import Episode

    screen = parse_dump(BLUETOOTH)
    apps = {"Settings": "com.android.settings"}
    shown = screen.elements                                   # Use Bluetooth, Device name, Pair new device
    turn = prompt.turn_text("Turn off Bluetooth.", screen, shown, apps, [])
    assert "App: Settings" in turn and '1. "Use Bluetooth" [switch on]' in turn
    past = list(reversed(shown))                              # the same screen ranked otherwise
    then = prompt.turn_text("Turn off the Bluetooth.", screen, past, apps, ["tap(1)"])
    elsewhere = prompt.turn_text("x", parse_dump(settings_page("Display", [("Font size", "", None)])), [], apps, [])
    ep = Episode(1, "Turn off the Bluetooth.", "d", "done", True,
                 [{"turn": elsewhere, "action": "tap(9)"}, {"turn": then, "action": "tap(3)"},
                  {"turn": then, "action": 'done("Task complete")', "hindsight": True}])
    (ex,) = prompt.examples_for(turn, shown, [(0.9, ep)])
    assert ex.action == "tap(1)"                             # "Use Bluetooth" is 1 here, was 3 then
    assert ex.screen_text == turn.replace("Turn off Bluetooth.", "Turn off the Bluetooth.")
    flipped = parse_dump(BLUETOOTH.replace('checked="true"', 'checked="false"'))
    after = prompt.turn_text("Turn off the Bluetooth.", flipped, flipped.elements, apps, ["tap(1)"])
    ep.steps[2]["turn"] = after
    now = prompt.turn_text("Turn off Bluetooth.", flipped, flipped.elements, apps, ["tap(1)"])
    assert prompt.examples_for(now, flipped.elements, [(0.9, ep)]) == []   # an ending needs the same task
    (ex,) = prompt.examples_for(now, flipped.elements, [(0.97, ep)])
    assert ex.action == 'done("Task complete")'
    assert prompt.examples_for(turn, shown, [(0.7, ep)]) == []    # another kind of task
    assert prompt.examples_for(turn, shown[:2], [(0.9, Episode(2, "t", "d", "done", True, [
        {"turn": then, "action": "tap(1)"}]))]) == []            # its element is not shown now
    msgs = prompt.messages(turn, [ex])
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[1]["content"].endswith('Last time, for "Turn off the Bluetooth." on this screen: done("Task complete")')
