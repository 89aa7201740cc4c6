"""Google Contacts' Fix & manage on the virtual phone: Export to file (the system file picker saves a
vCard 3.0 file that an adb client then lists and reads over the adb shell) and Merge & fix (duplicate
suggestions, Merge, Dismiss)."""
from __future__ import annotations

import pytest
from adb_shell.adb_device import AdbDeviceTcp

from agents.phone.device.phone import VirtualPhone
from agents.phone.adb.server import PhoneServer
from agents.phone.shell.sh import Shell
from support.phone_ui import centre, dump, find, nodes, solve, tap, texts


@pytest.fixture
def served():
    """A virtual phone behind a real adb server, and an adb client connected to it."""
    phone = VirtualPhone()
    server = PhoneServer(phone, port=0, auth=False)
    server.start()
    client = AdbDeviceTcp("127.0.0.1", server.port, default_transport_timeout_s=5)
    client.connect(auth_timeout_s=2)
    yield phone, client
    client.close()
    server.stop()


def cards(vcf: str) -> list[list[str]]:
    """The vCards of a file, each as its lines (vCard lines end in CRLF)."""
    assert vcf.endswith("\r\n") and "\n" not in vcf.replace("\r\n", "")
    out: list[list[str]] = []
    for line in vcf.split("\r\n")[:-1]:
        if line == "BEGIN:VCARD":
            out.append([])
        out[-1].append(line)
    return out


def test_export_to_file_saves_a_vcard_the_adb_shell_lists_and_reads(served):
    phone, adb = served
    assert adb.shell("ls /sdcard/Download") == ""
    solve(phone, ["Contacts", "Fix & manage", "Export to file"])
    assert texts(phone) == ["Export contacts", "alex.morgan.pixel@gmail.com", "Cancel", "Export"]
    tap(phone, "Export")
    state = phone.state()["foreground"]
    assert (state["package"], state["activity"]) == ("com.google.android.documentsui", "com.android.documentsui.picker.PickActivity")
    assert "No items" in texts(phone) and find(phone, "contacts.vcf").get("class") == "android.widget.EditText"
    tap(phone, "Save")
    assert phone.state()["foreground"]["screen"] == "contacts:list"  # back in the app that asked
    assert adb.shell("ls /sdcard/Download") == "contacts.vcf\n"
    vcf = adb.shell("cat /sdcard/Download/contacts.vcf")
    people = cards(vcf)
    assert len(people) == 14 and all(c[1] == "VERSION:3.0" and c[-1] == "END:VCARD" for c in people)
    ben = [c for c in people if "FN:Ben Carter" in c][0]
    assert ben == ["BEGIN:VCARD", "VERSION:3.0", "FN:Ben Carter", "N:Carter;Ben;;;", "ORG:Carter Design",
                   "TEL;TYPE=WORK:(415) 555-0163", "EMAIL;TYPE=INTERNET,WORK:ben@carterdesign.com", "END:VCARD"]
    assert "CATEGORIES:Work" in [c for c in people if "FN:David Kim" in c][0]
    assert adb.shell("ls /storage/emulated/0/Download") == "contacts.vcf\n"  # the same shared storage
    files = {f["path"]: f for f in phone.state()["files"]}
    assert files["/sdcard/Download/contacts.vcf"]["text"] == vcf
    adb.shell("hexa-phone reset")  # a factory reset empties the storage too
    assert adb.shell("ls /sdcard/Download") == "" and phone.state()["files"] == []


def test_the_picker_lists_earlier_exports_and_saves_under_the_typed_name():
    phone = VirtualPhone()
    sh = Shell(phone)
    solve(phone, ["Contacts", "Fix & manage", "Export to file", "Export", "Save"])
    solve(phone, ["Contacts", "Create contact", ("type", "Zoe"), "Save"])
    phone.key("KEYCODE_BACK")
    solve(phone, ["Fix & manage", "Export to file", "Export"])
    assert texts(phone).count("contacts.vcf") == 2  # the earlier file in the list, the suggested name
    field = [n for n in nodes(dump(phone)) if n.get("class") == "android.widget.EditText"][0]
    phone.tap(*centre(field))
    for _ in "contacts.vcf":
        phone.key("KEYCODE_DEL")
    assert find(phone, "Save").get("enabled") == "false"  # no name, no file
    phone.type_text("new.vcf")
    tap(phone, "Save")
    assert sh.run("ls /sdcard/Download") == "contacts.vcf\nnew.vcf\n"
    assert "FN:Zoe" in sh.run("cat /sdcard/Download/new.vcf") and "FN:Zoe" not in sh.run("cat /sdcard/Download/contacts.vcf")


def test_merge_and_fix_suggests_duplicates_and_merging_combines_them():
    phone = VirtualPhone()
    solve(phone, ["Contacts", "Fix & manage"])
    assert "1 suggestion" in texts(phone)
    tap(phone, "Merge & fix")
    shown = texts(phone)
    assert shown[:8] == ["Merge & fix", "Merge duplicates", "Possible duplicates", "Chloe Nguyen", "(408) 555-0148",
                         "Chloe Nguyen", "chloe.nguyen@brightstudio.com", "Dismiss"]
    tap(phone, "Merge")
    chloes = [c for c in phone.state()["contacts"]["list"] if c["first"] == "Chloe"]
    assert len(chloes) == 1 and len(phone.state()["contacts"]["list"]) == 13
    assert chloes[0] == {"id": 3, "first": "Chloe", "last": "Nguyen", "company": "Bright Studio", "phone": "(408) 555-0148",
                         "phone_label": "Mobile", "email": "chloe.nguyen@brightstudio.com", "email_label": "Work",
                         "labels": ["Friends"], "favorite": False}
    assert "No duplicates to merge" in texts(phone)
    phone.key("KEYCODE_BACK")
    assert "No suggestions" in texts(phone)


def test_a_shared_number_is_a_suggestion_too_and_dismiss_forgets_the_pair():
    # Sofia Rossi's record replaced by a second record of Lucas Martin's number
    luke = {"id": 13, "first": "Luke", "last": "M.", "company": "", "phone": "(510) 555-0137", "phone_label": "Work",
            "email": "luke@example.com", "email_label": "Home", "labels": ["Work"], "favorite": True}
    phone = VirtualPhone(overrides={"contacts.list[12]": luke})
    solve(phone, ["Contacts", "Fix & manage"])
    assert "2 suggestions" in texts(phone)
    tap(phone, "Merge & fix")
    assert texts(phone).count("Possible duplicates") == 2
    tap(phone, "Dismiss Chloe Nguyen and Chloe Nguyen")
    assert texts(phone).count("Possible duplicates") == 1 and "Luke M." in texts(phone)
    tap(phone, "Merge")
    merged = [c for c in phone.state()["contacts"]["list"] if c["phone"] == "(510) 555-0137"]
    assert len(merged) == 1 and merged[0]["first"] == "Lucas" and merged[0]["email"] == "luke@example.com"
    assert merged[0]["favorite"] is True and merged[0]["labels"] == ["Work"]
    phone.key("KEYCODE_BACK")
    assert "No suggestions" in texts(phone)  # the dismissed pair stays dismissed
