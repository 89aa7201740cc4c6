"""Google Messages' conversation organising on the virtual phone, driven through the screens: group
chats from Start chat, pinned conversations first, the Notifications switch of a conversation's
Details, Blocked numbers' Add a number, and the search query kept in state."""
from __future__ import annotations

from agents.phone.device.phone import VirtualPhone
from support.phone_ui import dump, find, long_press, nodes, open_app, screen, solve, tap, texts


def messages_app() -> VirtualPhone:
    return open_app("Messages")


def convo(phone: VirtualPhone, name: str) -> dict:
    return [c for c in phone.state()["messages"]["conversations"] if c["with"] == name][0]


def listed(phone: VirtualPhone) -> list[str]:
    names = {c["with"] for c in phone.state()["messages"]["conversations"]}
    return [t for t in texts(phone) if t in names]


def test_create_group_needs_two_people_and_opens_the_named_group():
    phone = messages_app()
    solve(phone, ["Start chat", "Create group"])
    assert screen(phone) == "messages:new_group" and texts(phone)[0] == "New group"
    assert find(phone, "Next").get("enabled") == "false"
    tap(phone, "Ben Carter")
    assert find(phone, "Remove Ben Carter") is not None and find(phone, "Next").get("enabled") == "false"
    phone.type_text("gra")  # To filters the contacts
    assert [t for t in texts(phone) if t.endswith("Thompson")] == ["Grace Thompson"] and "Ana Rodriguez" not in texts(phone)
    tap(phone, "Grace Thompson")
    assert "Ana Rodriguez" in texts(phone)  # picking clears the filter
    solve(phone, ["Hannah Wright", "Remove Hannah Wright"])  # a chip's tap takes the person out again
    tap(phone, "Next")
    assert texts(phone)[:5] == ["Group name", "Done", "Group name (optional)", "2 people", "Ben Carter"]
    solve(phone, [("type", "Book club"), "Done"])
    group = convo(phone, "Book club")
    assert screen(phone) == "messages:conversation" and texts(phone)[:2] == ["Book club", "Ben Carter, Grace Thompson"]
    assert (group["group"], group["members"], group["numbers"]) == (True, ["Ben Carter", "Grace Thompson"],
                                                                  ["(415) 555-0163", "(650) 555-0104"])
    assert find(phone, "Call") is None
    solve(phone, ["Text message", ("type", "Thursday at 7?"), "Send MMS"])
    assert convo(phone, "Book club")["messages"] == [{"from_me": True, "text": "Thursday at 7?"}]
    solve(phone, ["More options", "Details"])
    assert "2 people" in texts(phone) and find(phone, "Block & report spam") is None
    phone.key("KEYCODE_BACK")
    phone.key("KEYCODE_BACK")
    assert screen(phone) == "messages:list" and listed(phone)[:2] == ["Ana Rodriguez", "Book club"]


def test_a_group_without_a_name_is_called_by_its_members_and_listed_once_it_has_a_message():
    phone = messages_app()
    solve(phone, ["Start chat", "Create group", "Ana Rodriguez", "David Kim", "Next", "Done"])
    assert texts(phone)[0] == "Ana Rodriguez, David Kim"
    assert convo(phone, "Ana Rodriguez, David Kim")["members"] == ["Ana Rodriguez", "David Kim"]
    phone.key("KEYCODE_BACK")
    assert "Ana Rodriguez, David Kim" not in listed(phone)  # nothing sent yet, as a new chat
    solve(phone, ["Start chat", "Create group", "Ana Rodriguez", "David Kim", "Next", "Done", "Text message",
                  ("type", "Lunch Friday?"), ("long", "Send MMS"), "Tomorrow", "Schedule message"])
    phone.key("KEYCODE_BACK")
    assert "Scheduled: Lunch Friday?" in texts(phone)  # a scheduled message lists it already


def test_pinned_conversations_come_first_and_unpin_puts_them_back():
    phone = messages_app()
    assert find(phone, "Pinned") is not None and listed(phone)[0] == "Ana Rodriguez"
    long_press(phone, "Emily Chen")
    assert find(phone, "Pin") is not None
    tap(phone, "Pin")
    assert listed(phone)[:2] == ["Ana Rodriguez", "Emily Chen"] and texts(phone)[0] == "Messages"  # selection ended
    assert len([n for n in nodes(dump(phone)) if n.get("content-desc") == "Pinned"]) == 2
    solve(phone, [("long", "Ana Rodriguez"), "David Kim"])
    assert find(phone, "Unpin") is not None  # follows the first selected
    tap(phone, "Unpin")
    assert listed(phone)[0] == "Emily Chen"
    state = phone.state()["messages"]["conversations"]
    assert [c["with"] for c in state if c.get("pinned")] == ["Emily Chen"]
    assert listed(phone)[1:3] == ["Ana Rodriguez", "Pizza Place"]  # back in their own order


def test_the_notifications_switch_mutes_a_conversation_and_the_list_shows_it():
    phone = messages_app()
    assert find(phone, "Notifications off") is not None  # Pizza Place comes muted
    solve(phone, ["Emily Chen", "More options", "Details"])
    switch = [n for n in nodes(dump(phone)) if n.get("class") == "android.widget.Switch"][0]
    assert switch.get("checked") == "true"
    tap(phone, "Notifications")
    assert convo(phone, "Emily Chen")["muted"] is True
    assert [n for n in nodes(dump(phone)) if n.get("class") == "android.widget.Switch"][0].get("checked") == "false"
    phone.key("KEYCODE_BACK")
    phone.key("KEYCODE_BACK")
    assert len([n for n in nodes(dump(phone)) if n.get("content-desc") == "Notifications off"]) == 2
    assert "(415) 555-0176" not in phone.state()["messages"]["blocked"]


def test_add_a_number_blocks_only_after_a_number_is_typed():
    phone = messages_app()
    solve(phone, ["More options", "Spam & blocked", "More options", "Blocked numbers", "Add a number"])
    assert texts(phone) == ["Add a number", "Phone number", "Cancel", "Block"]
    assert find(phone, "Block").get("enabled") == "false"
    phone.type_text("(310) 555-0100")
    tap(phone, "Cancel")
    assert phone.state()["messages"]["blocked"] == ["+1 800-555-0175"]
    solve(phone, ["Add a number", ("type", "(310) 555-0100"), "Block"])
    assert phone.state()["messages"]["blocked"] == ["+1 800-555-0175", "(310) 555-0100"]
    assert screen(phone) == "messages:blocked_numbers" and "(310) 555-0100" in texts(phone)


def test_the_search_query_is_kept_in_state():
    phone = messages_app()
    solve(phone, ["Search", ("type", "row f")])
    assert phone.state()["messages"]["search_query"] == "row f" and listed(phone) == ["John Smith"]
    phone.key("KEYCODE_BACK")
    assert phone.state()["messages"]["search_query"] == "row f"
    tap(phone, "Search")
    assert phone.state()["messages"]["search_query"] == "" and listed(phone) == []
