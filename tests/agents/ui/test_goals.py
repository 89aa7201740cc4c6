"""Goals read from an app's graph (small graphs shaped like the explored Contacts app): a
two-state button's goal is the state the task asks for, a dialog offers a named option it did not
show while exploring, a control outside any list is no list to choose from, and a goal reached on
one of several people named together is done again for the next."""
from __future__ import annotations

from agents.ui.goals import GoalFinder
from agents.ui.graph import AppGraph, UIEdge, UIElement, UIScreen
from agents.ui.planner import Planner
from agents.ui.progress import Progress
from agents.ui.relevance import Relevance
from agents.ui.slots import analyze

PEOPLE = ["Ana Rodriguez", "Ben Carter", "Emily Chen", "Lucas Martin"]


def contacts() -> AppGraph:
    """Contacts: the list (1) → a contact's page (2) → its Label chip → "Add to label" (3),
    and the Labels page (4) listing every label."""
    g = AppGraph("contacts")
    el = UIElement

    def screen(sid, kind, title, *elements):
        g.screens[sid] = UIScreen(sid, "contacts", "A", kind, title, {e.key: e for e in elements})

    screen(1, "screen", "Contacts",
           el("contact_row", PEOPLE[0], "button", "TextView", fixed=False, labels=PEOPLE, row=True, varies=True))
    screen(2, "screen", "Ana Rodriguez",
           el("menu_star", "Remove from favorites", "button", "ImageButton",
              labels=["Remove from favorites", "Add to favorites"]),
           el("add_label_chip", "Label", "button", "Chip", labels=["Label", "Add to label"]))
    screen(3, "dialog", "Add to label",
           el("LinearLayout:Family", "Family", "button", "LinearLayout", labels=["Family"]),
           el("LinearLayout:Work", "Work", "button", "LinearLayout", labels=["Work"]),
           el("LinearLayout:Create label", "Create label", "button", "LinearLayout", labels=["Create label"]))
    screen(4, "screen", "Labels",
           el("label_row", "Family", "button", "TextView", fixed=False, labels=["Family", "Friends", "Work"],
              row=True, varies=True))
    screen(5, "dialog", "Create label", el("label_name", "Label name", "field", "EditText"))
    edges = [(1, "contact_row", "screen", 2, ""), (2, "menu_star", "commit", None, "remove"),
             (2, "add_label_chip", "dialog", 3, ""), (3, "LinearLayout:Family", "screen", 2, ""),
             (3, "LinearLayout:Work", "screen", 2, ""), (3, "LinearLayout:Create label", "dialog", 5, "")]
    for i, (src, key, effect, dst, sensitive) in enumerate(edges, 1):
        g.edges[i] = UIEdge(i, src, key, "tap", effect, dst=dst, label=g.screens[src].elements[key].label,
                            sensitive=sensitive)
    g.home = 1
    return g


def goals(task: str, n: int = 3):
    info = analyze(task)
    finder = GoalFinder(info, Relevance(info, None), [contacts()])
    return [(x.kind, x.label, x.screen) for x in finder.goals(list(range(len(info.slots))), limit=n)]


def test_a_two_state_button_is_the_state_the_task_asks_for():
    """Exploration saw "Remove from favorites" first (and never took it: it removes); a task to
    add someone to the favorites has the same button as its goal, in its other state."""
    assert goals("Add Nora Eklund to favorites")[0][:2] == ("commit", "Add to favorites")
    assert goals("Remove Nora Eklund from favorites")[0][:2] == ("commit", "Remove from favorites")
    # (of two as near, the one that takes away when the task does)
    assert [label for _, label, sid in goals("Unstar Nora Eklund", 10) if sid == 2] == ["Remove from favorites"]


def test_a_dialog_offers_an_option_it_did_not_show_while_exploring():
    """The contact explored was in Friends, so its "Add to label" dialog listed only Family and
    Work; Friends is among the labels the Labels page lists, and Landlords is called a label."""
    assert ("pick", "Friends", 3) in goals("Add Marcus Sorensen to the Friends label")
    assert ("pick", "Landlords", 3) in goals("Add Marcus Sorensen to the Landlords label")
    assert not any(label == "Choir" for _, label, _ in goals("Add Marcus Sorensen to Choir", 20))


def test_a_control_outside_any_list_is_no_list_to_choose_from():
    """The contact page's one Label chip reads "Add to label" on an unlabelled contact: the way
    to the dialog still takes it, not a detour back through the list."""
    g = contacts()
    chip, row = g.edges[3], g.edges[1]
    assert not g.is_row(chip) and g.is_row(row)
    assert [e.id for e in g.paths_from(2, rows=False)[3]] == [3]


def test_a_goal_reached_for_one_of_several_people_is_done_again_for_the_next():
    info = analyze("Add Ben Carter and Emily Chen to the Work label.")
    planner = Planner(info, Relevance(info, None), [contacts()])
    p = Progress(info)
    work = planner.finder.goals([0, 1, 2], limit=1)[0]
    assert work.label == "Work"
    p.used |= {0, 2}
    p.object = 0                          # Ben's row tapped, then Work picked for him
    p.reached.append(work)
    p.reached_on[work.id] = {0}
    assert planner.again(p) == {work.id} and not planner.finished(p)
    p.used.add(1)
    p.object = 1                          # Emily chosen: Work is due for her
    assert planner.again(p) == {work.id} and not planner.finished(p)
    p.reached_on[work.id].add(1)
    assert planner.again(p) == set() and planner.finished(p)
    # one person alone: done once
    solo = analyze("Add Ben Carter to the Work label.")
    planner, p = Planner(solo, Relevance(solo, None), [contacts()]), Progress(solo)
    p.used |= {0, 1}
    p.object, p.reached, p.reached_on = 0, [work], {work.id: {0}}
    assert planner.again(p) == set() and planner.finished(p)
