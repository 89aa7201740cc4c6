"""Google Messages on the virtual phone: every task is solved by tapping, long-pressing and typing
through the real screens, its check fails before and passes after; the send button, the selection
mode, search, Start chat and the modal dialogs behave like the real app's."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.phone.device.checks import load_tasks
from agents.phone.device.phone import VirtualPhone
from support.phone_ui import dump, find, long_press, nodes, played, solve, tap, tasks_by_id, texts

TASKS = Path(__file__).resolve().parents[3] / "assets" / "phone" / "tasks" / "messages.jsonl"

SOLUTIONS: dict[str, list] = {
    "messages-01": ["Messages", "Ana Rodriguez", "Text message", ("type", "On my way"), "Send SMS"],
    "messages-02": ["Messages", "Start chat", ("type", "Priya"), "Priya Patel", "Text message",
                    ("type", "Happy birthday! Hope you have a great day."), "Send SMS"],
    "messages-03": ["Messages", ("long", "+1 650-555-0199"), "More options", "Block", "Block"],
    "messages-04": ["Messages", ("long", "Pizza Place"), "Delete", "Delete"],
    "messages-05": ["Messages", "David Kim", "More options", "Archive"],
    "messages-06": ["Messages", "Start chat", ("type", "650-555-0123"), "Send to 650-555-0123", "Text message",
                    ("type", "Running 10 minutes late"), "Send SMS"],
    "messages-07": ["Messages", "More options", "Spam & blocked", "More options", "Blocked numbers", "Unblock",
                    "Unblock"],
    "messages-08": ["Messages", "Emily Chen", "Text message", ("type", "Happy birthday!"), ("long", "Send SMS"), "Tomorrow",
                    "Schedule message"],
    "messages-09": ["Messages", "John Smith", "Text message", ("type", "Game starts at 7"), ("long", "Send SMS"),
                    "Pick date & time", "15", "OK", "5", "30", "PM", "OK", "Schedule message"],
    "messages-10": ["Messages", "Ana Rodriguez", ("long", "Perfect, see you there"), "Star"],
    "messages-11": ["Messages", "John Smith", ("long", "Yep, two seats in row F"), "Unstar"],
    "messages-12": ["Messages", "Start chat", "Create group", "Ben Carter", "Priya Patel", "Next", ("type", "Weekend trip"),
                    "Done"],
    "messages-13": ["Messages", ("long", "John Smith"), "Pin"],
    "messages-14": ["Messages", ("long", "Ana Rodriguez"), "Unpin"],
    "messages-15": ["Messages", "Emily Chen", "More options", "Details", "Notifications"],
    "messages-16": ["Messages", "Pizza Place", "More options", "Details", "Notifications"],
    "messages-17": ["Messages", "More options", "Spam & blocked", "More options", "Blocked numbers", "Add a number",
                    ("type", "+1 202-555-0147"), "Block"],
    "messages-18": ["Messages", "Search", ("type", "tickets")],
    "messages-19": ["Messages", "David Kim", "Happy Friday! Drinks after work?", "Delete message"],
    "messages-20": ["Messages", "David Kim", "Happy Friday! Drinks after work?", "Send now"],
    "messages-21": ["Messages", "Ana Rodriguez", ("long", "Are we still on for lunch tomorrow?"), "Forward", "Emily Chen",
                    "Send SMS"],
}



def messages_app() -> VirtualPhone:
    phone = VirtualPhone()
    tap(phone, "Messages")
    return phone


def screen(phone: VirtualPhone) -> str:
    return phone.state()["foreground"]["screen"]


def conversations(phone: VirtualPhone) -> list[str]:
    names = {c["with"] for c in phone.state()["messages"]["conversations"]}
    return [t for t in texts(phone) if t in names]


@pytest.mark.parametrize("task", load_tasks(TASKS), ids=lambda t: t.id)
def test_every_task_is_solvable_and_not_solved_at_start(task):
    phone = VirtualPhone(overrides=task.setup)
    assert not task.passed(phone.state()), "the check passes before anything was done"
    solve(phone, SOLUTIONS[task.id])
    assert task.passed(phone.state()), (phone.state()["foreground"], texts(phone))


# plausible wrong moves: each leaves its task's check failing
NEAR_MISSES: dict[str, list] = {
    "messages-08": ["Messages", "Emily Chen", "Text message", ("type", "Happy birthday!"), "Send SMS"],
    "messages-09": ["Messages", "John Smith", "Text message", ("type", "Game starts at 7"), ("long", "Send SMS"), "Tomorrow",
                    "Schedule message"],
    "messages-10": ["Messages", "Ana Rodriguez", ("long", "Perfect, see you there"), "Delete", "Delete"],
    "messages-12": ["Messages", "Start chat", "Create group", "Ben Carter", "Priya Patel", "Next", "Done"],
    "messages-13": ["Messages", ("long", "John Smith"), "Archive"],
    "messages-15": ["Messages", "Emily Chen", "More options", "Block & report spam", "Block"],
    "messages-19": SOLUTIONS["messages-20"],
    "messages-20": SOLUTIONS["messages-19"],
}


@pytest.mark.parametrize("task_id", sorted(NEAR_MISSES))
def test_checks_tell_a_near_miss_from_success(task_id):
    task = tasks_by_id(TASKS)[task_id]
    assert not task.passed(played(task, NEAR_MISSES[task_id]))


def test_every_task_has_a_solution():
    assert {t.id for t in load_tasks(TASKS)} == set(SOLUTIONS)


def test_the_launcher_icon_opens_the_conversation_list():
    phone = messages_app()
    state = phone.state()
    assert state["foreground"]["activity"] == ".ui.ConversationListActivity" and not state["foreground"]["placeholder"]
    assert conversations(phone) == ["Ana Rodriguez", "Pizza Place", "+1 650-555-0199", "John Smith", "David Kim",
                                     "Emily Chen"]
    assert "You: Awesome, thanks!" in texts(phone)  # the snippet of my last message
    assert len([n for n in [find(phone, "Unread")] if n is not None]) == 1
    tap(phone, "Pizza Place")
    assert not phone.state()["messages"]["conversations"][1]["unread"]  # opening it reads it


def test_the_send_button_appears_only_with_text_and_sent_messages_show_as_bubbles():
    phone = messages_app()
    tap(phone, "John Smith")
    assert find(phone, "Send SMS") is None and find(phone, "Record audio message") is not None
    tap(phone, "Text message")
    phone.type_text("S")
    assert find(phone, "Send SMS") is not None
    phone.key("KEYCODE_DEL")
    assert find(phone, "Send SMS") is None
    phone.type_text("See you Saturday")
    tap(phone, "Send SMS")
    assert find(phone, "You said See you Saturday") is not None
    assert find(phone, "Send SMS") is None and "Text message" in texts(phone)  # the field is empty again
    phone.key("KEYCODE_BACK")
    # the newest conversation moves to the top, under the pinned one (Ana Rodriguez is pinned)
    assert conversations(phone)[:2] == ["Ana Rodriguez", "John Smith"]
    assert "You: See you Saturday" in texts(phone)


def test_long_press_starts_the_selection_mode():
    phone = messages_app()
    long_press(phone, "John Smith")
    assert screen(phone) == "messages:list"
    for icon in ("Exit selection mode", "Archive", "Delete", "More options"):
        assert find(phone, icon) is not None, icon
    assert find(phone, "Search") is None and find(phone, "Start chat") is None
    assert "1" in texts(phone)
    tap(phone, "David Kim")  # a tap adds to the selection instead of opening
    assert screen(phone) == "messages:list" and "2" in texts(phone)
    tap(phone, "More options")
    assert find(phone, "Block") is None  # only for one conversation
    phone.key("KEYCODE_BACK")
    tap(phone, "Delete")
    assert texts(phone)[0] == "Delete 2 conversations?"
    tap(phone, "Cancel")
    tap(phone, "David Kim")  # deselect
    assert "1" in texts(phone)
    phone.key("KEYCODE_BACK")  # BACK ends the selection, stays in the app
    assert screen(phone) == "messages:list" and find(phone, "Search") is not None
    assert len(phone.state()["messages"]["conversations"]) == 6


def test_dialogs_are_modal():
    phone = messages_app()
    long_press(phone, "Pizza Place")
    tap(phone, "Delete")
    assert texts(phone) == ["Delete 1 conversation?", "Cancel", "Delete"]  # the dialog's window alone
    phone.tap(540, 2200)  # outside: cancels the dialog, reaches nothing underneath
    assert screen(phone) == "messages:list" and "1" in texts(phone)
    assert len(phone.state()["messages"]["conversations"]) == 6
    tap(phone, "More options")
    tap(phone, "Block")
    assert texts(phone)[0] == "Block (650) 555-0180?"
    box = [n for n in nodes(dump(phone)) if n.get("class") == "android.widget.CheckBox"]
    assert [b.get("checked") for b in box] == ["true"]
    tap(phone, "Report spam")
    tap(phone, "Block")
    state = phone.state()["messages"]
    assert "(650) 555-0180" in state["blocked"] and state["reported"] == []
    assert "Pizza Place" not in conversations(phone)  # moved to Spam & blocked
    solve(phone, ["More options", "Spam & blocked"])
    assert "Pizza Place" in texts(phone)


def test_search_filters_conversations_as_you_type():
    phone = messages_app()
    tap(phone, "Search")
    assert find(phone, "Search conversations") is not None and conversations(phone) == []
    phone.type_text("pi")
    assert conversations(phone) == ["Pizza Place"]
    phone.key("KEYCODE_DEL")
    phone.key("KEYCODE_DEL")
    phone.type_text("row f")  # a message's text
    assert conversations(phone) == ["John Smith"]
    tap(phone, "John Smith")
    assert screen(phone) == "messages:conversation"


def test_start_chat_lists_matching_contacts_and_reuses_an_existing_conversation():
    phone = messages_app()
    tap(phone, "Start chat")
    assert "All contacts" in texts(phone) and "Ana Rodriguez" in texts(phone)
    phone.type_text("jo")
    assert [t for t in texts(phone) if t.endswith("Smith")] == ["John Smith"]
    assert find(phone, "Ana Rodriguez") is None
    tap(phone, "John Smith")
    assert "Awesome, thanks!" in texts(phone)
    phone.key("KEYCODE_BACK")
    assert screen(phone) == "messages:list"  # the New conversation screen was replaced
    assert len(phone.state()["messages"]["conversations"]) == 6


def test_archived_conversations_leave_the_list_and_come_back():
    phone = messages_app()
    solve(phone, [("long", "Emily Chen"), ("long", "John Smith"), "Archive"])
    assert "Emily Chen" not in conversations(phone) and "John Smith" not in conversations(phone)
    solve(phone, ["More options", "Archived", "Emily Chen", "More options", "Unarchive"])
    phone.key("KEYCODE_BACK")
    phone.key("KEYCODE_BACK")
    assert "Emily Chen" in conversations(phone) and "John Smith" not in conversations(phone)


def test_conversation_details_and_delete_from_the_conversation():
    phone = messages_app()
    solve(phone, ["David Kim", "More options", "Details"])
    assert "(650) 555-0132" in texts(phone) and find(phone, "Block & report spam") is not None
    phone.key("KEYCODE_BACK")
    solve(phone, ["More options", "Delete"])
    assert texts(phone)[0] == "Delete 1 conversation?"
    tap(phone, "Delete")
    assert screen(phone) == "messages:list" and "David Kim" not in conversations(phone)


def test_enter_in_to_starts_a_conversation_with_the_typed_number():
    phone = messages_app()
    tap(phone, "Start chat")
    phone.type_text("+1 650-555-0199")
    assert find(phone, "Send to +1 650-555-0199") is not None
    phone.key("KEYCODE_ENTER")  # the number already has a conversation: that one opens
    assert screen(phone) == "messages:conversation" and "+1 650-555-0199" in texts(phone)
    assert len(phone.state()["messages"]["conversations"]) == 6
