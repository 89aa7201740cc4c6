"""Google Contacts' labels, app settings and search query on the virtual phone, driven through the
screens: the Labels section of Fix & manage, a label's page (Add contact, Rename label, Delete label,
Remove contacts), the chips on a contact's page, Sort by / Name format, and the query kept in state."""
from __future__ import annotations

from agents.phone.device.phone import VirtualPhone
from support.phone_ui import dump, find, long_press, nodes, open_app, screen, solve, tap, texts

ACCOUNT = "Signed in as alex.morgan.pixel@gmail.com"


def contacts_app() -> VirtualPhone:
    return open_app("Contacts")


def labels_of(phone: VirtualPhone, last: str) -> list[str]:
    return [c for c in phone.state()["contacts"]["list"] if c["last"] == last][0]["labels"]


def members(phone: VirtualPhone, label: str) -> list[str]:
    return sorted(f"{c['first']} {c['last']}" for c in phone.state()["contacts"]["list"] if label in c["labels"])


def test_fix_and_manage_lists_the_labels_with_their_counts_and_a_label_opens_on_its_members():
    phone = contacts_app()
    tap(phone, "Fix & manage")
    shown = texts(phone)
    at = shown.index("Labels")
    assert shown[at + 1:at + 8] == ["Family", "1 contact", "Friends", "3 contacts", "Work", "2 contacts", "Create label"]
    tap(phone, "Friends")
    assert screen(phone) == "contacts:label" and texts(phone)[0] == "Friends"
    assert [t for t in texts(phone) if " " in t and "(" not in t] == ["Ana Rodriguez", "Chloe Nguyen", "Sofia Rossi"]
    tap(phone, "Chloe Nguyen")
    assert screen(phone) == "contacts:detail" and "Chloe Nguyen" in texts(phone)


def test_create_label_refuses_an_empty_or_existing_name_and_opens_the_new_label():
    phone = contacts_app()
    solve(phone, ["Fix & manage", "Create label"])
    assert texts(phone) == ["Create label", "Label name", "Cancel", "OK"]
    assert find(phone, "OK").get("enabled") == "false"
    phone.type_text("Work")
    assert find(phone, "OK").get("enabled") == "false"  # that label already exists
    phone.type_text("out buddies")
    tap(phone, "OK")
    assert screen(phone) == "contacts:label" and "No contacts with this label" in texts(phone)
    assert phone.state()["contacts"]["labels"] == ["Family", "Friends", "Work", "Workout buddies"]
    solve(phone, ["Add contact", "Mark Lee", "Add contacts"])
    assert members(phone, "Workout buddies") == ["Mark Lee"] and "Mark Lee" in texts(phone)


def test_the_member_picker_offers_only_non_members_and_adds_nothing_until_confirmed():
    phone = contacts_app()
    solve(phone, ["Fix & manage", "Work", "Add contact"])
    assert screen(phone) == "contacts:label_add" and "David Kim" not in texts(phone)
    assert find(phone, "Add contacts").get("enabled") == "false"
    solve(phone, ["Ben Carter", "Emily Chen", "Emily Chen"])  # the second tap unchecks Emily
    assert texts(phone)[0] == "1 selected"
    boxes = {n.get("checked") for n in nodes(dump(phone)) if n.get("class") == "android.widget.CheckBox"}
    assert boxes == {"true", "false"}
    phone.key("KEYCODE_BACK")  # leaving the picker adds nobody
    assert members(phone, "Work") == ["David Kim", "James Wilson"]
    solve(phone, ["Add contact", "Ben Carter", "Add contacts"])
    assert members(phone, "Work") == ["Ben Carter", "David Kim", "James Wilson"]


def test_rename_label_keeps_its_members_and_the_page_follows_the_new_name():
    phone = contacts_app()
    solve(phone, ["Fix & manage", "Work", "More options"])
    assert texts(phone) == ["Rename label", "Delete label", "Remove contacts"]
    tap(phone, "Rename label")
    assert texts(phone)[:2] == ["Rename label", "Work"]
    for _ in "Work":
        phone.key("KEYCODE_DEL")
    phone.type_text("Office")
    tap(phone, "OK")
    assert screen(phone) == "contacts:label" and texts(phone)[0] == "Office"
    assert members(phone, "Office") == ["David Kim", "James Wilson"] and members(phone, "Work") == []
    assert "Work" not in phone.state()["contacts"]["labels"]


def test_delete_label_asks_first_and_untags_everyone_but_keeps_the_contacts():
    phone = contacts_app()
    solve(phone, ["Fix & manage", "Friends", "More options", "Delete label"])
    assert texts(phone) == ['Delete the label "Friends"? (Contacts themselves will not be deleted.)', "Cancel", "Delete"]
    tap(phone, "Cancel")
    assert screen(phone) == "contacts:label" and "Friends" in phone.state()["contacts"]["labels"]
    solve(phone, ["More options", "Delete label", "Delete"])
    state = phone.state()["contacts"]
    assert screen(phone) == "contacts:list" and "Friends" not in state["labels"]
    assert members(phone, "Friends") == [] and len(state["list"]) == 14
    assert "Friends" not in texts(phone)


def test_remove_contacts_selects_members_and_takes_them_out_of_the_label():
    phone = contacts_app()
    solve(phone, ["Fix & manage", "Friends"])
    long_press(phone, "Ana Rodriguez")
    assert texts(phone)[0] == "1 selected" and find(phone, "Exit selection mode") is not None
    tap(phone, "Sofia Rossi")  # in selection mode a tap selects instead of opening
    assert screen(phone) == "contacts:label" and texts(phone)[0] == "2 selected"
    tap(phone, "Remove from label")
    assert members(phone, "Friends") == ["Chloe Nguyen"] and texts(phone)[0] == "Friends"
    solve(phone, ["More options", "Remove contacts"])
    assert find(phone, "Remove from label").get("enabled") == "false"
    phone.key("KEYCODE_BACK")  # BACK ends the selection mode first
    assert screen(phone) == "contacts:label" and find(phone, "Add contact") is not None


def test_label_chips_open_their_label_and_their_x_takes_the_contact_out():
    phone = contacts_app()
    solve(phone, ["Ana Rodriguez", "Friends"])
    assert screen(phone) == "contacts:label" and texts(phone)[0] == "Friends"
    phone.key("KEYCODE_BACK")
    solve(phone, ["Add to label", "Create label"])
    assert texts(phone)[0] == "Create label"
    solve(phone, [("type", "Running"), "OK"])
    assert screen(phone) == "contacts:detail" and labels_of(phone, "Rodriguez") == ["Friends", "Running"]
    tap(phone, "Remove Friends")
    assert labels_of(phone, "Rodriguez") == ["Running"] and "Friends" not in texts(phone)
    assert "Friends" in phone.state()["contacts"]["labels"]  # the label itself stays


def test_sort_by_and_name_format_reorder_and_rename_everywhere():
    phone = contacts_app()
    solve(phone, [ACCOUNT, "Contacts app settings"])
    assert phone.state()["foreground"]["activity"].endswith("ContactsPreferenceActivity")
    tap(phone, "Sort by")
    assert texts(phone) == ["Sort by", "First name", "Last name", "Cancel"]
    tap(phone, "Last name")
    assert "Last name" in texts(phone)  # the summary
    phone.key("KEYCODE_BACK")
    shown = texts(phone)
    assert shown[5:9] == ["C", "Ben Carter", "Emily Chen", "K"]  # by last name, shown first name first
    solve(phone, [ACCOUNT, "Contacts app settings", "Name format", "Last name first"])
    assert phone.state()["contacts"]["settings"] == {"sort_by": "last", "name_format": "last"}
    phone.key("KEYCODE_BACK")
    assert texts(phone)[1:5] == ["Favorites", "Kim, David", "Rodriguez, Ana", "Thompson, Grace"]
    tap(phone, "Carter, Ben")
    assert texts(phone)[0] == "Carter, Ben"
    solve(phone, ["Navigate up", "Search contacts", ("type", "ben")])
    assert "Carter, Ben" in texts(phone)
    assert phone.launch("com.google.android.contacts", "com.android.contacts.preference.ContactsPreferenceActivity")
    assert screen(phone) == "contacts:settings"  # `am start -n` reaches the settings too


def test_the_search_query_is_kept_in_state_and_a_new_search_starts_empty():
    phone = contacts_app()
    solve(phone, ["Search contacts", ("type", "acme")])
    assert phone.state()["contacts"]["search_query"] == "acme"
    assert [t for t in texts(phone) if t in ("David Kim", "James Wilson")] == ["David Kim", "James Wilson"]
    phone.key("KEYCODE_BACK")
    assert phone.state()["contacts"]["search_query"] == "acme"  # what was searched stays readable
    tap(phone, "Search contacts")
    assert phone.state()["contacts"]["search_query"] == "" and find(phone, "Search contacts") is not None
