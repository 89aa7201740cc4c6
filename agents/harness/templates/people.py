"""The people of drawn tasks: new contacts and conversations added to the phone's own, with ids,
names and numbers that collide with nothing already there (Contacts and Messages share them)."""
from __future__ import annotations

import copy
import re

from .base import next_id, phone
from .pools import LAST, OLD_MESSAGES, number, person


def digits_of(text: str) -> str:
    return re.sub(r"\D", "", text or "")[-10:]


class Cast:
    """New contacts and conversations over a fresh state; ``setup()`` is what the phone needs."""

    def __init__(self, fresh: dict):
        self.contacts = copy.deepcopy(fresh["contacts"]["list"])
        self.labels = list(fresh["contacts"]["labels"])
        self.conversations = copy.deepcopy(fresh["messages"]["conversations"])
        self.blocked = list(fresh["messages"]["blocked"])
        self.contact_id = max(fresh["contacts"]["next_id"], next_id(self.contacts))
        self.conversation_id = max(fresh["messages"]["next_id"], next_id(self.conversations))
        self.touched: set[str] = set()

    # what is in use: a new person must not share a first name, full name or number with anyone
    def names(self) -> set[str]:
        out = {c["first"] for c in self.contacts} | {f"{c['first']} {c['last']}" for c in self.contacts}
        for c in self.conversations:
            out |= {c["with"], c["with"].split(" ")[0]}
        return out

    def numbers(self) -> set[str]:
        found = [c["phone"] for c in self.contacts] + [c["number"] for c in self.conversations] + self.blocked
        return {digits_of(n) for n in found if n}

    def new_number(self, rng) -> str:
        return number(rng, self.numbers())

    def add_contact(self, rng, first: str | None = None, **extra) -> dict:
        """A new contact (a drawn name unless ``first`` is given: a namesake), with a mobile number."""
        if first is None:
            first, last = person(rng, self.names())
        else:
            last = rng.choice([n for n in LAST if f"{first} {n}" not in self.names()])
        record = {"id": self.contact_id, "first": first, "last": last, "company": "",
                  "phone": phone(self.new_number(rng)), "phone_label": "Mobile", "email": "", "email_label": "Home",
                  "labels": [], "favorite": False}
        record.update(extra)
        self.contact_id += 1
        self.contacts.append(record)
        self.touched.add("contacts")
        return record

    def add_label(self, name: str) -> None:
        self.labels.append(name)
        self.touched.add("contacts")

    def add_conversation(self, rng, contact: dict | None = None, digits: str | None = None,
                         messages: list | None = None, **extra) -> dict:
        """A conversation with a contact (by name) or with a bare number, a few messages long."""
        number_text = contact["phone"] if contact else phone(digits or self.new_number(rng), 3)
        if messages is None:
            texts = rng.sample(OLD_MESSAGES, rng.randint(1, 3))
            messages = [{"from_me": i % 2 == 1, "text": t} for i, t in enumerate(texts)]
        record = {"id": self.conversation_id, "with": f"{contact['first']} {contact['last']}" if contact else number_text,
                  "number": number_text, "time": rng.choice(["9:05 AM", "Yesterday", "Tue", "Jun 6"]),
                  "archived": False, "unread": False, "messages": messages}
        record.update(extra)
        self.conversation_id += 1
        # newest first: a conversation from today goes on top, an older one lower down
        self.conversations.insert(0 if record["time"].endswith("M") else rng.randint(1, len(self.conversations)),
                                  record)
        self.touched.add("messages")
        return record

    def setup(self) -> dict:
        out: dict = {}
        if "contacts" in self.touched:
            out.update({"contacts.list": self.contacts, "contacts.next_id": self.contact_id,
                        "contacts.labels": self.labels})
        if "messages" in self.touched:
            out.update({"messages.conversations": self.conversations, "messages.next_id": self.conversation_id,
                        "messages.blocked": self.blocked})
        return copy.deepcopy(out)


def full(contact: dict) -> str:
    return f"{contact['first']} {contact['last']}"
