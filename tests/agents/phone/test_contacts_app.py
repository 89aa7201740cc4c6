"""Google Contacts on the virtual phone: every task is solved by tapping and typing through the real
screens (elements found by their text or content-desc in the dump), its check fails before and
passes after; the list order, search, favorites, the editor's discard dialog and the delete
confirmation behave like the real app's."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.phone.device.checks import load_tasks
from agents.phone.device.phone import VirtualPhone
from support.phone_ui import centre, find, played, scroll, solve, tap, tasks_by_id, texts

TASKS = Path(__file__).resolve().parents[3] / "assets" / "phone" / "tasks" / "contacts.jsonl"
DEL = ("key", "KEYCODE_DEL")
ACCOUNT = "Signed in as alex.morgan.pixel@gmail.com"  # the account picture: its menu holds the app settings

SOLUTIONS: dict[str, list] = {
    "contacts-01": ["Contacts", "Create contact", ("type", "Ana"), "Last name", ("type", "Silva"), "Phone",
                    ("type", "555-0142"), "Save"],
    "contacts-02": ["Contacts", "John Smith", "Add to favorites"],
    "contacts-03": ["Contacts", "Mark Lee", "More options", "Delete", "Delete"],
    "contacts-04": ["Contacts", "Emily Chen", "Edit contact", "Email", ("type", "emily.chen@example.com"), "Save"],
    "contacts-05": ["Contacts", "David Kim", "Remove from favorites"],
    "contacts-06": ["Contacts", "Priya Patel", "Add to label", "Family"],
    "contacts-07": ["Contacts", "Create contact", ("type", "Carlos"), "Last name", ("type", "Mendez"), "Company",
                    ("type", "Acme Corp"), "Phone", ("type", "650-555-0123"), "Email",
                    ("type", "carlos.mendez@acmecorp.com"), "Save"],
    "contacts-08": ["Contacts", "Search contacts", ("type", "Ben"), "Ben Carter", "Edit contact", "(415) 555-0163"]
                   + [DEL] * len("(415) 555-0163") + [("type", "(415) 555-0199"), "Save"],
    "contacts-09": ["Contacts", "Fix & manage", "Create label", ("type", "Book club"), "OK"],
    "contacts-10": ["Contacts", "Fix & manage", "Work", "Add contact", "Ben Carter", "Emily Chen", "Add contacts"],
    "contacts-11": ["Contacts", "Sofia Rossi", "Remove Friends"],
    "contacts-12": ["Contacts", "Fix & manage", "Work", "More options", "Rename label"] + [DEL] * len("Work")
                   + [("type", "Colleagues"), "OK"],
    "contacts-13": ["Contacts", "Fix & manage", "Family", "More options", "Delete label", "Delete"],
    "contacts-14": ["Contacts", "Fix & manage", "Export to file", "Export", "Save"],
    "contacts-15": ["Contacts", "Fix & manage", "Export to file", "Export", "contacts.vcf"] + [DEL] * len("contacts.vcf")
                   + [("type", "backup.vcf"), "Save"],
    "contacts-16": ["Contacts", "Fix & manage", "Merge & fix", "Merge"],
    "contacts-17": ["Contacts", ACCOUNT, "Contacts app settings", "Sort by", "Last name"],
    "contacts-18": ["Contacts", ACCOUNT, "Contacts app settings", "Name format", "Last name first"],
    "contacts-19": ["Contacts", "Search contacts", ("type", "Acme")],
    "contacts-20": ["Contacts", "Lucas Martin", "Add to label", "Create label", ("type", "Soccer"), "OK"],
}



def contacts_app() -> VirtualPhone:
    phone = VirtualPhone()
    tap(phone, "Contacts")
    return phone


def names(phone: VirtualPhone) -> list[str]:
    people = {f"{c['first']} {c['last']}" for c in phone.state()["contacts"]["list"]}
    return [t for t in texts(phone) if t in people]


@pytest.mark.parametrize("task", load_tasks(TASKS), ids=lambda t: t.id)
def test_every_task_is_solvable_and_not_solved_at_start(task):
    phone = VirtualPhone(overrides=task.setup)
    assert not task.passed(phone.state()), "the check passes before anything was done"
    solve(phone, SOLUTIONS[task.id])
    assert task.passed(phone.state()), (phone.state()["foreground"], texts(phone))


# plausible wrong moves: each leaves its task's check failing
NEAR_MISSES: dict[str, list] = {
    "contacts-10": ["Contacts", "Fix & manage", "Work", "Add contact", "Ben Carter", "Add contacts"],
    "contacts-11": ["Contacts", "Sofia Rossi", "More options", "Delete", "Delete"],
    "contacts-12": ["Contacts", "Fix & manage", "Create label", ("type", "Colleagues"), "OK"],
    "contacts-13": ["Contacts", "Grace Thompson", "More options", "Delete", "Delete"],
    "contacts-15": SOLUTIONS["contacts-14"],
    "contacts-16": ["Contacts", "Fix & manage", "Merge & fix", "Dismiss"],
    "contacts-18": SOLUTIONS["contacts-17"],
    "contacts-20": ["Contacts", "Fix & manage", "Create label", ("type", "Soccer"), "OK"],
}


@pytest.mark.parametrize("task_id", sorted(NEAR_MISSES))
def test_checks_tell_a_near_miss_from_success(task_id):
    task = tasks_by_id(TASKS)[task_id]
    assert not task.passed(played(task, NEAR_MISSES[task_id]))


def test_every_task_has_a_solution():
    assert {t.id for t in load_tasks(TASKS)} == set(SOLUTIONS)


def test_the_launcher_icon_opens_the_contact_list_with_favorites_first_then_a_to_z():
    phone = contacts_app()
    state = phone.state()
    assert state["foreground"]["package"] == "com.google.android.contacts"
    assert not state["foreground"]["placeholder"]
    assert state["foreground"]["activity"] == "com.android.contacts.activities.PeopleActivity"
    shown = texts(phone)
    assert shown[:5] == ["Search contacts", "Favorites", "Ana Rodriguez", "David Kim", "Grace Thompson"]
    assert shown[5:9] == ["A", "Ana Rodriguez", "B", "Ben Carter"]
    assert "Sofia Rossi" not in shown  # below the fold: the list scrolls
    tap(phone, "Sofia Rossi")
    assert phone.state()["foreground"]["screen"] == "contacts:detail"


def test_a_new_contact_is_sorted_in_and_opens_on_its_page():
    phone = contacts_app()
    solve(phone, ["Create contact", ("type", "Bea"), "Last name", ("type", "Adams"), "Save"])
    assert phone.state()["foreground"]["screen"] == "contacts:detail"
    assert "Bea Adams" in texts(phone) and find(phone, "Call").get("enabled") == "false"  # no phone yet
    phone.key("KEYCODE_BACK")
    shown = names(phone)
    assert shown.index("Bea Adams") == shown.index("Ben Carter") - 1


def test_search_filters_as_you_type():
    phone = contacts_app()
    tap(phone, "Search contacts")
    assert names(phone) == []
    phone.type_text("a")
    assert len(names(phone)) > 5
    phone.type_text("n")
    assert names(phone) == ["Ana Rodriguez", "Hannah Wright"]
    phone.type_text("a r")
    assert names(phone) == ["Ana Rodriguez"]
    phone.type_text("x")
    assert names(phone) == [] and "No results" in texts(phone)
    tap(phone, "Clear text")
    phone.type_text("555-0192")  # by number
    assert names(phone) == ["Mark Lee"]


def test_discard_dialog_only_when_edited_and_modal():
    phone = contacts_app()
    tap(phone, "Create contact")
    phone.key("KEYCODE_BACK")  # nothing typed: leaves at once
    assert phone.state()["foreground"]["screen"] == "contacts:list"
    tap(phone, "Create contact")
    assert find(phone, "Save").get("enabled") == "false"
    phone.type_text("Zoe")
    assert find(phone, "Save").get("enabled") == "true"
    save = centre(find(phone, "Save"))
    tap(phone, "Cancel")
    assert texts(phone) == ["Discard changes?", "Cancel", "Discard"]  # only the dialog's window
    phone.tap(*save)  # outside the dialog: dismisses it, does not reach Save underneath
    assert phone.state()["foreground"]["screen"] == "contacts:editor"
    assert len(phone.state()["contacts"]["list"]) == 14
    phone.key("KEYCODE_BACK")
    tap(phone, "Cancel")
    assert phone.state()["foreground"]["screen"] == "contacts:editor" and "Zoe" in texts(phone)
    phone.key("KEYCODE_BACK")
    tap(phone, "Discard")
    assert phone.state()["foreground"]["screen"] == "contacts:list"
    assert len(phone.state()["contacts"]["list"]) == 14


def test_delete_confirmation_can_be_cancelled():
    phone = contacts_app()
    solve(phone, ["Mark Lee", "More options", "Delete"])
    assert texts(phone)[0] == "Delete this contact?"
    tap(phone, "Cancel")
    assert phone.state()["foreground"]["screen"] == "contacts:detail"
    assert len(phone.state()["contacts"]["list"]) == 14


def test_starring_moves_a_contact_into_favorites_and_labels_show_on_the_page():
    phone = contacts_app()
    solve(phone, ["Lucas Martin", "Add to favorites"])
    assert find(phone, "Remove from favorites") is not None
    solve(phone, ["Add to label", "Work"])
    assert "Work" in texts(phone)
    tap(phone, "Add to label")
    assert "Work" not in texts(phone)  # the picker offers only the labels it is not in yet
    tap(phone, "Cancel")
    phone.key("KEYCODE_BACK")
    for _ in range(4):  # the list kept its scroll position: back to the top
        scroll(phone, up=False)
    assert texts(phone)[1:5] == ["Favorites", "Ana Rodriguez", "David Kim", "Grace Thompson"]
    assert texts(phone)[5] == "Lucas Martin"


def test_editing_keeps_the_contact_and_the_phone_label_dropdown_works():
    phone = contacts_app()
    solve(phone, ["Emily Chen", "Edit contact"])
    assert texts(phone)[0] == "Edit contact"
    solve(phone, ["Mobile", "Work", "Save"])
    emily = [c for c in phone.state()["contacts"]["list"] if c["last"] == "Chen"][0]
    assert emily["phone_label"] == "Work" and emily["phone"] == "(415) 555-0176"
    assert phone.state()["foreground"]["screen"] == "contacts:detail"


def test_text_opens_the_conversation_in_messages():
    phone = contacts_app()
    solve(phone, ["John Smith", "Text"])
    state = phone.state()
    assert state["foreground"]["package"] == "com.google.android.apps.messaging"
    assert "Awesome, thanks!" in texts(phone)
