"""Episode recall and learning: a verified success of a task of the same form lends its goals; a task that
only looks alike (another verb) lends nothing; an app nobody explored is not learned into; a commit
taken in an episode stays a commit."""
from __future__ import annotations

from types import SimpleNamespace

from agents.ui.recall import Recall
from agents.ui.relevance import Relevance
from agents.ui.slots import analyze


class Episodes:
    def __init__(self, rows):
        self.rows = rows

    def list(self, limit=300):
        return self.rows


def episode(task, goal, success=True):
    return SimpleNamespace(task=task, outcome="done", success=success,
                           steps=[{"goal": list(goal), "finishes": True}])


def recall_for(task, rows):
    info = analyze(task)
    same = Relevance(info, lambda texts: [[1.0, 0.0] for _ in texts])   # every template alike
    return Recall(SimpleNamespace(episodes=Episodes(rows)), info, same)


def test_a_success_lends_its_goal_to_a_task_of_the_same_form_and_verb():
    block = (53, "add_blocked_number", "type")
    r = recall_for("Block the number +1 312-555-0159.", [episode("Block the number +1 650-555-0199.", block)])
    assert r.good[block] > 0 and r.matches == 1


def test_another_verb_lends_nothing_however_alike_the_words():
    block = (53, "add_blocked_number", "type")
    r = recall_for("Unblock the number +1 800-555-0175.", [episode("Block the number +1 650-555-0199.", block)])
    assert not r.good and r.matches == 0


def test_an_app_nobody_explored_is_not_learned_into_while_others_are():
    from agents.ui.graph import UIScreen
    from agents.ui.knowledge import Knowledge
    from agents.ui.learn import locate
    from agents.ui.screen import Element, Screen

    knowledge = Knowledge(None)
    apps = {"Settings": "com.android.settings", "Chrome": "com.android.chrome"}
    settings = knowledge.graph("com.android.settings")
    knowledge.save_screen(settings, UIScreen(0, "com.android.settings", "S", "screen", "Settings"))
    chrome = Screen([Element(text="Search or type URL", rid="url_bar", clickable=True, bounds=(0, 200, 1080, 330))],
                    ["Welcome to Chrome"], [], package="com.android.chrome", activity="Main")
    assert locate(knowledge, chrome, apps) == (None, None)
    assert not knowledge.graph("com.android.chrome").screens
    # a picker without an icon (the files picker an export opens) is still learned as it goes
    picker = Screen([Element(text="Save", rid="save", clickable=True, bounds=(800, 2200, 1000, 2300))],
                    ["Downloads"], [], package="com.android.documentsui", activity="Picker")
    g, here = locate(knowledge, picker, apps)
    assert g is not None and here is not None and g.package == "com.android.documentsui"
    # with nothing explored at all, the agent learns as it goes
    alone = Knowledge(None)
    g, here = locate(alone, chrome, apps)
    assert g is not None and here is not None and g.package == "com.android.chrome"


def test_a_commit_taken_in_an_episode_stays_a_commit():
    from agents.ui.graph import UIEdge, UIElement, UIScreen
    from agents.ui.knowledge import Knowledge
    from agents.ui.learn import _learn_edge
    from agents.ui.progress import Progress
    from agents.ui.screen import Element, Screen
    from agents.ui.step import Step

    knowledge = Knowledge(None)
    g = knowledge.graph("app")
    timer = knowledge.save_screen(g, UIScreen(0, "app", "A", "screen", "5:00"))
    timer.elements["delete"] = UIElement("delete", "Delete", "button")
    setup = knowledge.save_screen(g, UIScreen(0, "app", "A", "screen", "00h 00m 00s"))
    edge = knowledge.save_edge(g, UIEdge(0, timer.id, "delete", "tap", "commit", label="Delete"))
    button = Element(text="Delete", rid="delete", clickable=True, bounds=(0, 0, 100, 100))
    before = Screen([button], ["5:00"], [], package="app")
    after = Screen([], ["00h 00m 00s"], [], package="app")
    _learn_edge(knowledge, Progress(analyze("Cancel the timer")), g, timer, Step("tap", button, edge=edge),
                "delete", before, after, setup, True)
    assert edge.effect == "commit" and edge.dst is None and edge.ok == 1


def test_a_success_lends_its_goals_in_the_order_they_were_reached():
    from agents.ui.goals import Goal

    made, label = (2, "button1", "tap"), (4, "label_input_field", "type")
    ep = SimpleNamespace(task='Set an alarm for 3PM with the label "gym"', outcome="done", success=True,
                         steps=[{"goal": list(made), "finishes": True}, {"goal": list(label), "finishes": True}])
    r = recall_for('Set an alarm for 5PM with the label "run"', [ep])
    first, then = Goal(*made, "commit", "OK"), Goal(*label, "field", "Label")
    assert r.bonus(first) > 0 and r.bonus(then) == 0          # the alarm is made before it is labelled
    r.done = {first.id}
    assert r.bonus(then) > 0 and r.bonus(first) == 0


def test_an_episode_teaches_no_data_of_its_own_to_the_graph():
    """A list's rows as an episode leaves them (an alarm it labelled, a language it added) are
    gone after a reset: the catalogue keeps what exploring saw."""
    from agents.phone.device.phone import VirtualPhone
    from agents.ui.graph import UIScreen
    from agents.ui.screen import parse_dump

    phone = VirtualPhone()
    phone.launch("com.google.android.deskclock")

    def look():
        screen = parse_dump(phone.dump_ui(), phone.screen_size())
        screen.package, screen.activity = phone.focus()
        return screen

    known = UIScreen.of(look())
    times = set(known.elements["digital_clock"].labels)
    alarms = phone.state()["clock"]["alarms"]
    phone.reset({"clock.alarms": alarms + [{"hour": 3, "minute": 0, "ampm": "PM", "label": "gym", "days": [],
                                            "on": True, "vibrate": True, "sound": "Default (Cesium)"}]})
    phone.launch("com.google.android.deskclock")
    known.observe(look(), rows=False)                 # an episode's visit
    assert set(known.elements["digital_clock"].labels) == times
    known.observe(look())                             # exploring's
    assert "3:00 PM" in known.elements["digital_clock"].labels


def test_a_value_the_episode_put_on_a_control_is_not_learned_as_its_label():
    """Labelling an alarm 'meeting' makes its "Add label" button read 'meeting': learned, the
    button had two labels, was taken for a list of labelled rows, and the next task to label an
    alarm looked for a row showing its label instead of tapping it (graph.AppGraph._in_list)."""
    from agents.ui.graph import AppGraph, UIEdge, UIScreen
    from agents.ui.progress import Progress
    from agents.ui.screen import Element, Screen

    def card(label):
        return Screen([Element(text=label, rid="edit_label", clickable=True, in_list=True, bounds=(0, 900, 500, 980))],
                      ["7:00 AM"], [], package="clock", activity="A")

    g = AppGraph("clock")
    known = g.screens[1] = UIScreen.of(card("Add label"))
    known.id = 1
    g.edges[1] = UIEdge(1, 1, "edit_label", "tap", "dialog", dst=2, label="Add label")
    p = Progress(analyze('Set an alarm for 3PM with the label "meeting"'))
    p.typed["edit_label_field"] = "meeting"
    known.observe(card("meeting"), rows=False, data=p.data())
    assert known.elements["edit_label"].labels == ["Add label"] and not g.is_row(g.edges[1])
    # another alarm's label seen on it (not this task's value) is learned and makes it count as a
    # list's row; the way to the Label dialog still takes it — here once, it is no choice to make —
    # not a way that avoids rows (another tab's own Label button)
    known.observe(card("Standup call"), rows=False, data=p.data())
    assert known.elements["edit_label"].labels == ["Add label", "Standup call"] and g.is_row(g.edges[1])
    from agents.ui.goals import Goal
    from agents.ui.planner import Planner
    from agents.ui.relevance import Relevance

    for sid, kind, title in ((2, "dialog", "Label"), (3, "screen", "Timer")):
        g.screens[sid] = UIScreen(sid, "clock", "A", kind, title)
    g.edges[2] = UIEdge(2, 1, "tab_timer", "tap", "screen", dst=3, label="Timer")
    g.edges[3] = UIEdge(3, 3, "timer_label", "tap", "dialog", dst=2, label="Add label")
    planner = Planner(p.task, Relevance(p.task, None), [g])
    way = planner.routes.route(g, known, Goal(2, "label_field", "type", "field", "Label"), p, card("Standup call"))
    assert [e.id for e in way] == [1]


def test_a_send_that_empties_the_box_confirms_what_was_typed():
    """A message's Send stays on the conversation: the text leaving its box is what says it was
    taken (before, the typed text stayed "waiting for its OK" and the agent went looking for
    another place to type it, into Settings)."""
    from agents.ui.learn import _taken
    from agents.ui.progress import Progress
    from agents.ui.screen import Element, Screen

    def chat(text):
        return Screen([Element(text=text, rid="compose", cls="android.widget.EditText", editable=True,
                               clickable=True, bounds=(0, 2000, 900, 2100)),
                       Element(desc="Send SMS", rid="send", clickable=True, bounds=(900, 2000, 1080, 2100))],
                      ["650-555-0123"], [], package="messaging", activity="A")

    p = Progress(analyze("Text 650-555-0123 'Running late'"))
    p.typed["compose"] = "Running late"
    assert _taken(p, chat("Running late"), chat("Text message"))
    assert not _taken(p, chat("Running late"), chat("Running late"))     # nothing sent yet


def test_an_alarm_named_by_a_time_no_list_showed_is_looked_for_among_the_cards():
    """"Name the 06:25 alarm": exploration never saw 6:25 on a card, and the card's arrow (the
    way in) shows no time — its time does, and a time is what the cards show (before, the agent
    made a new 6:25 alarm and labelled that)."""
    from agents.ui.goals import shaped

    when = analyze('Name the 06:25 alarm "Pay rent"').slots[0]
    assert when.kind == "time"
    assert shaped("6:25 AM", when) and shaped("18:05", when) and shaped("7:00 a.m.", when)
    assert not shaped("Not scheduled", when) and not shaped("Mon, Tue, Wed", when)


def test_a_persons_detail_in_a_value_to_enter_names_no_ones_detail():
    """"Call this phone 'Noah's phone'" is a device name to type, not Noah's phone number: it
    sent the task to Contacts (the app with a form holding a person's name and phone)."""
    from agents.ui.apps import AppChooser
    from agents.ui.graph import AppGraph, UIElement, UIScreen
    from agents.ui.relevance import Relevance

    g = AppGraph("contacts")
    form = g.screens[1] = UIScreen(1, "contacts", "A", "screen", "Create contact")
    form.elements = {k: UIElement(k, k.replace("_", " ").title(), "field") for k in ("first_name", "last_name", "phone")}

    def keeps(task):
        info = analyze(task)
        return AppChooser(info, Relevance(info, None), [g], None, {"Contacts": "contacts"})._keeps_people("contacts")

    assert keeps("Change Ben Carter's phone number to (415) 555-0199.")
    assert keeps("Could you update the number for Maya Lind to 312-555-0101?")
    assert not keeps('I need you to call this phone "Noah\'s phone".')


def test_a_row_with_its_own_ways_is_swiped_away_only_as_a_last_resort():
    """A conversation swiped away is archived, not deleted: a row that can be tapped or
    long-pressed is swiped only when nothing else is left; a row that is only text (a world
    clock's city) is swiped first."""
    from agents.ui.graph import UIScreen
    from agents.ui.objects import Objects
    from agents.ui.progress import Progress
    from agents.ui.relevance import Relevance
    from agents.ui.screen import Element, Screen

    info = analyze("Remove the whole conversation with Noah Brennan.")
    chat = Element(text="Noah Brennan", rid="conversation", clickable=True, long_clickable=True, row=True,
                   bounds=(0, 400, 1080, 600))
    screen = Screen([chat], [], [], package="messaging", activity="A")
    here = UIScreen(1, "messaging", "A", "screen", "Messages")
    step = Objects(info, Relevance(info, None)).swipe_away(screen, here, Progress(info))[0]
    assert step.action == "swipe_away" and step.score < 1.0
    city = analyze("Remove Hanoi from the world clock.")
    texts = Screen([], ["Hanoi"], [], package="clock", activity="A")
    texts.boxes = [("Hanoi", (40, 400, 400, 480))]
    step = Objects(city, Relevance(city, None)).swipe_away(texts, here, Progress(city))[0]
    assert step.score >= 2.0


def test_of_options_alike_the_one_the_task_says_without_more_is_the_goal():
    """"Change the lock screen wallpaper": Lock screen, not Home and lock screens (it set both)."""
    from agents.ui.goals import GoalFinder
    from agents.ui.graph import AppGraph, UIEdge, UIElement, UIScreen
    from agents.ui.relevance import Relevance

    g = AppGraph("wallpaper")
    home = g.screens[1] = UIScreen(1, "wallpaper", "A", "screen", "Glacier bay")
    home.elements = {"set": UIElement("set", "Set wallpaper", "button")}
    dialog = g.screens[2] = UIScreen(2, "wallpaper", "A", "dialog", "Set wallpaper")
    options = ("Home screen", "Lock screen", "Home and lock screens")
    dialog.elements = {o: UIElement(o, o, "button") for o in options}
    g.home = 1
    g.edges[1] = UIEdge(1, 1, "set", "tap", "dialog", dst=2, label="Set wallpaper")
    for i, o in enumerate(options):
        g.edges[2 + i] = UIEdge(2 + i, 2, o, "tap", "screen", dst=1, label=o)   # (set: back to the page)
    info = analyze("Change the lock screen wallpaper.")
    corpus = [e.label for s in g.screens.values() for e in s.elements.values()]

    def meaning(texts):      # a sentence embedding that finds "both screens" a little closer
        return [[1.0, 0.0] if t == info.text or "Home and lock" in t else [0.95, 0.31] for t in texts]

    goals = GoalFinder(info, Relevance(info, meaning, corpus), [g]).goals([], limit=5)
    picks = [x.label for x in goals if x.label in options]
    assert picks[0] == "Lock screen", [(x.label, round(x.score, 2)) for x in goals]
