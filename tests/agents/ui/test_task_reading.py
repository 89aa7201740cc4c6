"""Reading a task: its wording reduced to what the planner reads, and its slots."""
from __future__ import annotations

import pytest

from agents.ui.slots import analyze, slot_match
from agents.ui.wording import normalize

APPS = ["Settings", "Clock", "Contacts", "Messages", "Phone"]


@pytest.mark.parametrize("task, core, app", [
    ("Could you take Wednesday off the 07:19 alarm?", "Remove Wednesday from the 07:19 alarm", None),
    ("Using the Settings app, set the phone's device name to 'Kitchen phone'.",
     "Set the phone's device name to 'Kitchen phone'", "Settings"),
    ("In Google Clock, add a new alarm for 6:20 PM.", "Add a new alarm for 6:20 PM", "Clock"),
    ("Can you get rid of Jonah Brennan's contact for me?", "Delete Jonah Brennan's contact", None),
    ("Please text Leila Sorensen \"Start without me, I'm stuck in traffic\".",
     "Send a text to Leila Sorensen \"Start without me, I'm stuck in traffic\"", None),
    ("Using the Google Messages app, message the number 3035550101 with \"Hi\".",
     "Send a text to the number 3035550101 with \"Hi\"", "Messages"),
    ("Set the text size to 150%.", "Set the text size to 150%", None),
    ("In Contacts, take Victor Quinn out of my favorite contacts.",
     "Remove Victor Quinn from my favorite contacts", "Contacts"),
    ("Please change the name of my Volunteers label to Landlords.", "Rename my Volunteers label to Landlords",
     None),
    ("Put Freya Duval in my Friends group.", "Add Freya Duval to my Friends group", None),
    ("Put the phone in airplane mode.", "Put the phone in airplane mode", None),
    ("Could you remove +1 (702) 555-0113 from my blocked numbers?", "Unblock +1 (702) 555-0113", None),
    ("Mark the message 'Can you send me the address?' in my chat with Nora as starred.",
     "Star the message 'Can you send me the address?' in my chat with Nora", None),
    ("Open Google Clock.", "", "Clock"),
    ("Please let +1 (512) 555-0147 text me again by unblocking it.", "Unblock +1 (512) 555-0147", None),
    ("Stop (617) 555-0179 from texting me.", "Block (617) 555-0179", None),
    ("Open Contacts and make Elliot Lindqvist a favorite contact.", "Add Elliot Lindqvist to favorites",
     "Contacts"),
    ("I no longer need Deutsch as a language, remove it.", "Remove Deutsch from my languages", None),
    ("I don't need the Band label anymore.", "Remove the Band label", None),
    ("Label Hugo Kowalski as Family.", "Add Hugo Kowalski to the Family label", None),
    ("Display size: Small", "Set the display size to Small", None),
    ("Default browser: Chrome", "Set the default browser to Chrome", None),
    ("New email for Kira Quinn: kq@example.com", "Set the new email for Kira Quinn to kq@example.com", None),
    ("Text Ana: 'on my way'", "Send a text to Ana: 'on my way'", None),
    ("Please call the Volunteers label Parents instead.", "Rename the Volunteers label to Parents", None),
    ("Call my phone \"Pixel Nine\".", "Change the device name to \"Pixel Nine\"", None),   # no phone call
    ("Call Ana Rodriguez.", "Call Ana Rodriguez", None),
    ("Stop pinning my chat with Ana.", "Unpin my chat with Ana", None),
    ("Please stop muting Pizza Place.", "Unmute Pizza Place", None),
    ("Set up my new Bose QC35 II over Bluetooth.", "Pair with Bose QC35 II", None),
    ("Please check if the software is up to date.", "Check for a system update", None),
    # a person starred is a favorite contact; a message is starred by its words
    ("Can you star Ines Moreau in my contacts for me?", "Add Ines Moreau to favorites in my contacts", None),
    ("Unstar Tomas Reyes.", "Remove Tomas Reyes from favorites", None),
    ("Star the message 'See you at 6' from Ana.", "Star the message 'See you at 6' from Ana", None),
    ("Star 'See you at 6'.", "Star 'See you at 6'", None),
    ("Could you add the label Choir to Ines Vargas?", "Add Ines Vargas to the Choir label", None),
    ("Give Omar Haddad the Neighbors label.", "Add Omar Haddad to the Neighbors label", None),
])
def test_wording_keeps_the_task_and_names_the_app(task, core, app):
    got, named = normalize(task, APPS)
    assert got.strip(" .") == core and named == app


def test_quoted_text_is_never_rewritten():
    got, _ = normalize("Send 'could you get rid of it please' to Ana in Messages", APPS)
    assert "'could you get rid of it please'" in got


def kinds(task: str) -> list[tuple[str, str]]:
    return [(s.kind, s.text) for s in analyze(task).slots]


def test_slots_of_every_kind():
    assert kinds("Text Priya Patel 'It's done' at 555-0142") == [
        ("name", "Priya Patel"), ("text", "It's done"), ("phone", "555-0142")]
    assert kinds("Add the email address emily.chen@example.com to Emily Chen's contact") == [
        ("email", "emily.chen@example.com"), ("name", "Emily Chen")]
    assert kinds("Create a contact for Carlos Mendez who works at Acme Corp") == [
        ("name", "Carlos Mendez"), ("name", "Acme Corp")]
    assert kinds("Create a new contact label called Book club.") == [("name", "Book club")]
    info = analyze("Change the 7:55 a.m. alarm to 4:14 PM")
    assert [s.value for s in info.slots] == [(7, 55), (16, 14)]
    assert analyze("Start a 1 hour 30 minute timer").slots[0].value == 5400
    assert analyze("Schedule it for June 15 at 5:30 PM").slots[0].value == (6, 15)
    assert analyze("Delete the contact Mark Lee.").slots[0].text == "Mark Lee"
    # a number written without separators is still a phone number; a longer one is not
    assert kinds("Block 7205550161.") == [("phone", "7205550161")]
    assert kinds("Text +13035550101 'hi'") == [("phone", "+13035550101"), ("text", "hi")]
    assert kinds("Order 12345678901234") == [("number", "12345678901234")]


def test_polarity_and_words():
    off = analyze("Turn off Bluetooth.")
    assert off.polarity is False and off.words == []
    assert analyze("Enable location services on my Android device.").polarity is True
    assert analyze("Change the phone ringtone to 'Copycat' on my device").polarity is None
    assert analyze("Make the font size as large as possible.").maximum is True


def test_slot_matching():
    name = analyze("Send it to Ana").slots[0]
    assert slot_match(name, "Ana Rodriguez") > 0.5 and slot_match(name, "Anabel Lee") == 0.0
    phone = analyze("Block +1 650-555-0199").slots[0]
    assert slot_match(phone, "(650) 555-0199") == 1.0 and slot_match(phone, "(650) 555-0198") == 0.0
    time = analyze("the 7:00 AM alarm").slots[0]
    assert slot_match(time, "7:00 AM") == 1.0 and slot_match(time, "7:00 PM") == 0.0
    minute = analyze("Add one minute to the timer").slots[0]
    assert slot_match(minute, "+1:00") == 1.0
    day = analyze("also ring on Saturdays").slots[0]
    assert slot_match(day, "Saturday") == 1.0 and slot_match(day, "Sunday") == 0.0


def test_a_slider_end_and_words_that_only_qualify_a_setting():
    from agents.ui.goals import extreme, qualifiers

    assert extreme("Max out the media volume") == "max"
    assert extreme("Make the font size as large as possible") == "max"
    assert extreme("Set the alarm volume to the minimum") == "min"
    assert extreme("Make the text bigger") is None and extreme("Set an alarm for 6 AM") is None
    assert qualifiers("Set the call volume to the minimum") == {"call"}
    assert qualifiers("Call Ana") == set()


def test_a_model_number_belongs_to_its_name_and_other_scripts_are_names():
    assert kinds("Connect my Fitbit Charge 6 with Bluetooth") == [("name", "Fitbit Charge 6"), ("name", "Bluetooth")]
    assert kinds("Pair the Bose QC35 II") == [("name", "Bose QC35 II")]
    assert kinds("Set Timer 2 to 5 minutes") == [("name", "Timer 2"), ("duration", "5 minutes")]
    assert kinds("Text Ana 3 times") == [("name", "Ana"), ("number", "3")]       # a count, not a model
    assert kinds("Remove 한국어 from my languages") == [("name", "한국어")]
    assert kinds("Add Русский язык") == [("name", "Русский язык")]
    assert analyze("Change the device name to 'Den'").words == ["change", "device", "name"]
    assert kinds("Rename my Study group label to Neighbors") == [("name", "Study group"), ("name", "Neighbors")]
    assert kinds("Update Freya Haddad's email to f@x.io") == [("name", "Freya Haddad"), ("email", "f@x.io")]
    assert analyze("Add a label called Book club").slots[0].value == "called"    # a name to give
    assert [s.value for s in analyze("Make the alarm ring every weekday").slots] == [0, 1, 2, 3, 4]
    assert [s.value for s in analyze("Have it go off on weekends").slots] == [5, 6]


@pytest.mark.parametrize("said, listed, same", [
    ("Danish", "Dansk", True), ("Korean", "한국어", True), ("German", "Deutsch (Deutschland)", True),
    ("French (Canada)", "Français (Canada)", True), ("French (Canada)", "Français (France)", False),
    ("Ana Silva", "Dansk", False),
])
def test_a_language_is_found_by_the_name_it_gives_itself(said, listed, same):
    assert (slot_match(analyze(f"Add {said} now").slots[0], listed) == 1.0) is same


def test_unmuting_is_about_notifications():
    """"Unmute the conversation with Zoe": the Details page's Notifications switch, turned on
    (the word matched nothing before: "unmute" is no "mute" once stemmed)."""
    from agents.ui.relevance import stem, word_match, words_of

    assert word_match(stem("unmute"), words_of("Notifications")) > 0
    assert analyze("Unmute the conversation with Zoe.").polarity is True


def test_a_new_value_is_no_new_object():
    """"New email for Kira Quinn: …" replaces her email; it made a contact named Kira Quinn."""
    from agents.ui.goals import CREATE

    assert not CREATE.search("Set the new email for Kira Quinn to kq@example.com")
    assert not CREATE.search("Save my new number 555-0101 for Ana")
    assert CREATE.search("Put Lucas Martin in a new label called Soccer")
    assert CREATE.search("Create a contact for Yusuf Sato")


def test_a_details_type_is_said_with_the_detail():
    """"A work number" sets the number's type; "they now work at Tidewater" does not."""
    from agents.ui.planner import typed_as

    assert typed_as("Work", "Make a new contact: Rafael Tanaka with work number 3035550157")
    assert typed_as("Home", "Add her home email ana@example.com")
    assert not typed_as("Work", "Update Clara Fischer's contact: they now work at Tidewater Logistics")


def test_names_said_together_are_each_an_object():
    info = analyze("Add Priya Patel, Omar Haddad and Mark Lee to the Family label.")
    assert [s.text for s in info.slots] == ["Priya Patel", "Omar Haddad", "Mark Lee", "Family"]
    assert info.together(0) == {1, 2} and info.together(2) == {0, 1} and info.together(3) == set()
    info = analyze("Forward Ana's message to Emily Chen.")
    assert info.together(0) == set() and info.together(1) == set()


def test_what_a_task_makes_is_typed_and_who_it_names_is_found():
    from agents.ui.goals import made

    def names(task):
        info = analyze(task)
        return sorted(info.slots[i].text for i in made(info))

    assert names("Put Lucas Martin in a new label called Soccer.") == ["Soccer"]
    assert names("Create a label called Neighbors and add Oscar Ortega to it.") == ["Neighbors"]
    assert names("Create a contact for Rafael Castillo with mobile 415-555-0100.") == ["415-555-0100", "Rafael Castillo"]
    assert names("Save Ana Ruiz as a new contact.") == ["Ana Ruiz"]
    assert names("Add Ben Carter to the Work label.") == []
