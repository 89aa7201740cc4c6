"""Google Messages' schedule send and message actions on the virtual phone, driven through the screens:
the Schedule send bottom sheet behind a long press on send, the Material date and time pickers, the
scheduled bubble's options, and the selection mode of message bubbles (Star, Copy, Delete, Forward)."""
from __future__ import annotations

from agents.phone.device.phone import VirtualPhone
from support.phone_ui import bounds, dump, find, long_press, nodes, screen, solve, tap, texts


def conversation(name: str, draft: str = "") -> VirtualPhone:
    phone = VirtualPhone()
    solve(phone, ["Messages", name])
    if draft:
        solve(phone, ["Text message", ("type", draft)])
    return phone


def convo(phone: VirtualPhone, name: str) -> dict:
    return [c for c in phone.state()["messages"]["conversations"] if c["with"] == name][0]


def test_a_long_press_on_send_opens_the_schedule_send_sheet_at_the_bottom():
    phone = conversation("Emily Chen", "See you soon")
    long_press(phone, "Send SMS")
    assert screen(phone) == "messages:schedule_sheet"
    assert texts(phone) == ["Schedule send", "Later today", "6:00 PM", "Later tonight", "9:00 PM", "Tomorrow", "Thu 8:00 AM",
                            "Pick date & time"]
    sheet = [n for n in nodes(dump(phone)) if n.get("resource-id").endswith(":id/design_bottom_sheet")][0]
    left, top, right, bottom = bounds(sheet)
    assert (left, right, bottom) == (0, 1080, 2337) and top > 1000
    phone.tap(540, 500)  # above the sheet: dismissed, nothing scheduled
    assert screen(phone) == "messages:conversation" and find(phone, "Send SMS") is not None


def test_a_chosen_time_waits_in_the_compose_bar_until_send_and_can_be_cancelled():
    phone = conversation("Emily Chen", "See you soon")
    solve(phone, [("long", "Send SMS"), "Later tonight"])
    assert "Scheduled for Jun 12, 9:00 PM" in texts(phone) and find(phone, "Schedule message") is not None
    assert convo(phone, "Emily Chen").get("scheduled") is None  # nothing stored before sending
    tap(phone, "Cancel scheduled send")
    assert find(phone, "Send SMS") is not None and "Scheduled for Jun 12, 9:00 PM" not in texts(phone)
    solve(phone, [("long", "Send SMS"), "Later today", "Schedule message"])
    emily = convo(phone, "Emily Chen")
    assert emily["scheduled"] == [{"text": "See you soon", "date": "Jun 12", "time": "6:00 PM"}]
    assert len(emily["messages"]) == 2 and emily["time"] == "Jun 8"  # not sent
    assert find(phone, "Scheduled message See you soon") is not None and "Scheduled for Jun 12, 6:00 PM" in texts(phone)
    assert "Text message" in texts(phone)  # the field is empty again


def test_pick_date_and_time_uses_the_material_pickers():
    phone = conversation("John Smith", "Dinner?")
    solve(phone, [("long", "Send SMS"), "Pick date & time"])
    assert texts(phone)[:3] == ["Select date", "Wed, Jun 12", "June 2024"]
    assert find(phone, "11").get("enabled") == "false" and find(phone, "12").get("checked") == "true"
    assert find(phone, "Change to previous month").get("enabled") == "false"
    tap(phone, "Change to next month")
    assert "July 2024" in texts(phone) and find(phone, "Mon, Jul 1") is not None
    solve(phone, ["4", "OK"])
    assert texts(phone)[0] == "Select time" and find(phone, "9").get("checked") == "true"  # the hour chip
    solve(phone, ["7", "15", "PM", "OK"])  # 7 on the dial, then 15 on the minutes' dial
    assert "Scheduled for Jul 4, 7:15 PM" in texts(phone)
    tap(phone, "Schedule message")
    assert convo(phone, "John Smith")["scheduled"] == [{"text": "Dinner?", "date": "Jul 4", "time": "7:15 PM"}]


def test_a_scheduled_message_can_be_sent_now_updated_or_deleted():
    phone = conversation("David Kim")
    tap(phone, "Happy Friday! Drinks after work?")
    assert texts(phone) == ["Scheduled message", "Send now", "Update message", "Delete message", "Cancel"]
    tap(phone, "Update message")  # back into the compose bar (focused) with its time
    assert "Scheduled for Jun 14, 5:00 PM" in texts(phone) and convo(phone, "David Kim")["scheduled"] == []
    phone.type_text(" 6pm?")
    tap(phone, "Schedule message")
    assert convo(phone, "David Kim")["scheduled"] == [{"text": "Happy Friday! Drinks after work? 6pm?", "date": "Jun 14",
                                                        "time": "5:00 PM"}]
    solve(phone, ["Happy Friday! Drinks after work? 6pm?", "Send now"])
    david = convo(phone, "David Kim")
    assert david["scheduled"] == [] and david["messages"][-1] == {"from_me": True, "text": "Happy Friday! Drinks after work? 6pm?"}


def test_a_long_press_on_a_bubble_selects_it_and_star_toggles():
    phone = conversation("Ana Rodriguez")
    long_press(phone, "Perfect, see you there")
    assert texts(phone)[0] == "1" and find(phone, "Exit selection mode") is not None
    for action in ("Star", "Copy", "Delete", "Forward", "More options"):
        assert find(phone, action) is not None, action
    assert find(phone, "Call") is None
    selected = [n for n in nodes(dump(phone)) if n.get("selected") == "true"]
    assert len(selected) == 1
    tap(phone, "Are we still on for lunch tomorrow?")  # a tap adds to the selection
    assert texts(phone)[0] == "2" and find(phone, "Forward") is None  # one message only
    tap(phone, "Star")
    assert [m.get("starred") for m in convo(phone, "Ana Rodriguez")["messages"]] == [True, None, True]
    assert len([n for n in nodes(dump(phone)) if n.get("content-desc") == "Starred"]) == 2
    long_press(phone, "Perfect, see you there")
    assert find(phone, "Unstar") is not None
    tap(phone, "Unstar")
    assert [m.get("starred") for m in convo(phone, "Ana Rodriguez")["messages"]] == [True, None, False]
    long_press(phone, "Yes! 12:30 at Luna Cafe?")
    tap(phone, "Copy")  # ends the selection, changes nothing
    assert find(phone, "Call") is not None and len(convo(phone, "Ana Rodriguez")["messages"]) == 3
    long_press(phone, "Yes! 12:30 at Luna Cafe?")
    phone.key("KEYCODE_BACK")  # BACK ends the selection, stays in the conversation
    assert screen(phone) == "messages:conversation" and texts(phone)[0] == "Ana Rodriguez"


def test_deleting_selected_messages_asks_first():
    phone = conversation("John Smith")
    solve(phone, [("long", "Did you get the tickets for Saturday?"), "Delete"])
    assert texts(phone) == ["Delete 1 message?", "Cancel", "Delete"]
    tap(phone, "Cancel")
    assert len(convo(phone, "John Smith")["messages"]) == 3 and texts(phone)[0] == "1"
    tap(phone, "Delete")
    tap(phone, "Delete")
    assert [m["text"] for m in convo(phone, "John Smith")["messages"]] == ["Yep, two seats in row F", "Awesome, thanks!"]
    assert texts(phone)[0] == "John Smith"  # the selection ended


def test_forward_puts_the_text_in_another_conversation_and_starred_lists_stars():
    phone = conversation("Pizza Place")
    solve(phone, [("long", "Thanks for ordering from Pizza Place! Your order #4471 has been received."), "Forward"])
    assert texts(phone)[0] == "Forward message" and "Create group" not in texts(phone)
    tap(phone, "Ana Rodriguez")
    assert "Thanks for ordering from Pizza Place! Your order #4471 has been received." in texts(phone)
    tap(phone, "Send SMS")
    assert convo(phone, "Ana Rodriguez")["messages"][-1]["text"].startswith("Thanks for ordering")
    phone.key("KEYCODE_BACK")
    phone.key("KEYCODE_BACK")
    solve(phone, ["More options", "Starred"])
    assert texts(phone) == ["Starred", "John Smith", "Yep, two seats in row F"]
    tap(phone, "Yep, two seats in row F")
    assert screen(phone) == "messages:conversation" and texts(phone)[0] == "John Smith"
