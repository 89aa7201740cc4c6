"""Messages templates: send (to a conversation by full or first name, to a contact without one, to a
bare number), block / unblock, delete / archive / pin / mute a conversation, star a message, schedule
a message. The people and conversations are drawn and added by the setup."""
from __future__ import annotations

import copy

from .base import (Variant, all_, by_id, contains, eq, fields, has, not_, phone, phone_is, quoted, say, some,
                   template, truthy)
from .people import Cast, digits_of, full
from .pools import MESSAGES

TEMPLATES: list = []
CONVS = "messages.conversations"
SEND = ["Send {t} to {n}", "Text {n} {t}", "Send a message to {n} saying {t}", "Message {n}: {t}"]
MONTHS = {"Jun": "June", "Jul": "July"}
WEEKDAYS = {"Jun 14": "Friday", "Jun 15": "Saturday", "Jun 17": "Monday", "Jun 18": "Tuesday"}


def _at(ident) -> str:
    return by_id(CONVS, ident)


def _edit(cast: Cast, ident: int, change) -> dict:
    """The conversations with ``change`` applied to a copy of one of them."""
    out = copy.deepcopy(cast.conversations)
    for c in out:
        if c["id"] == ident:
            change(c)
    return {CONVS: out}


def _sent(text: str):
    return lambda c: c["messages"].append({"from_me": True, "text": text})


def _talk(rng, fresh, namesake: float = 0.0):
    """(cast, conversation, its contact or None, the name to call it by, a namesake's conversation)."""
    cast = Cast(fresh)
    if rng.random() < 0.2:  # a conversation with a bare number, as with an unknown sender
        conv = cast.add_conversation(rng)
        return cast, conv, None, phone(digits_of(conv["number"]), rng.randrange(7)), None
    person = cast.add_contact(rng)
    conv = cast.add_conversation(rng, person)
    twin = None
    if rng.random() < namesake:
        twin = cast.add_conversation(rng, cast.add_contact(rng, first=person["first"]))
    name = full(person) if twin or rng.random() < 0.5 else person["first"]
    return cast, conv, person, name, twin


def _new_conv(cast: Cast, number: str, name: str, text: str) -> dict:
    new = {"id": cast.conversation_id, "with": name, "number": number, "messages": [{"from_me": True, "text": text}],
           "archived": False, "unread": False, "time": "Now"}
    return {CONVS: [new] + copy.deepcopy(cast.conversations), "messages.next_id": cast.conversation_id + 1}


def _texted(digits: str, text: str) -> dict:
    return some(CONVS, all_(phone_is("item.number", digits), eq("item.messages[-1].from_me", True),
                            contains("item.messages[-1].text", text)))


@template(TEMPLATES, "messages.send_existing")
def send_existing(rng, fresh):
    """Send a text in an existing conversation, named by full or first name (a namesake's stays)."""
    cast, conv, person, name, twin = _talk(rng, fresh, namesake=0.4)
    text = rng.choice(MESSAGES)
    at = _at(conv["id"])
    if person is None:
        # a bare number may be typed into Start chat in another form, which opens a new thread here
        check = [_texted(digits_of(conv["number"]), text)]
    else:
        check = [eq(f"{at}.messages[-1].from_me", True), contains(f"{at}.messages[-1].text", text),
                 eq(f"{at}.messages.length", len(conv["messages"]) + 1)]
    check += [eq(f"{_at(twin['id'])}.messages.length", len(twin["messages"]))] if twin else []
    near = [_edit(cast, conv["id"], _sent(text.rsplit(" ", 1)[0]))]
    near += [_edit(cast, twin["id"], _sent(text))] if twin else []
    return Variant(say(rng, "messages", SEND + ["Reply to {n} with {t}"], n=name, t=quoted(rng, text)), cast.setup(),
                   all_(*check),
                   _edit(cast, conv["id"], _sent(text)), tuple(near), {"conversation": conv, "name": name, "text": text})


@template(TEMPLATES, "messages.send_contact")
def send_contact(rng, fresh):
    """Text a contact who has no conversation yet (found through Start chat or Contacts)."""
    cast = Cast(fresh)
    person = cast.add_contact(rng)
    twin = cast.add_contact(rng, first=person["first"]) if rng.random() < 0.4 else None
    text = rng.choice(MESSAGES)
    digits = digits_of(person["phone"])
    near = [_new_conv(cast, person["phone"], full(person), text.rsplit(" ", 1)[0])]
    near += [_new_conv(cast, twin["phone"], full(twin), text)] if twin else []
    return Variant(say(rng, "messages", SEND, n=full(person), t=quoted(rng, text)), cast.setup(),
                   _texted(digits, text), _new_conv(cast, person["phone"], full(person), text), tuple(near),
                   {"contact": person, "text": text})


@template(TEMPLATES, "messages.send_number")
def send_number(rng, fresh):
    """Text a bare phone number, written in one of the usual ways, that has no conversation yet."""
    cast = Cast(fresh)
    digits = cast.new_number(rng)
    said = phone(digits, rng.randrange(7))
    text = rng.choice(MESSAGES)
    forms = ["Send a text to {p} saying {t}", "Text {p}: {t}", "Message the number {p} with {t}",
             "Send {t} to {p}"]
    wrong = digits[:-1] + str((int(digits[-1]) + 1) % 10)
    return Variant(say(rng, "messages", forms, p=said, t=quoted(rng, text)), {}, _texted(digits, text),
                   _new_conv(cast, said, said, text), (_new_conv(cast, phone(wrong), phone(wrong), text),),
                   {"number": said, "text": text})


def _blocked(digits: str) -> dict:
    return some("messages.blocked", phone_is("item", digits))


@template(TEMPLATES, "messages.block")
def block(rng, fresh):
    """Block a number: one that texted (its conversation is there) or one typed into Blocked numbers."""
    cast = Cast(fresh)
    spam = rng.random() < 0.6
    if spam:
        conv = cast.add_conversation(rng, messages=[{"from_me": False, "text": rng.choice(
            ["Your parcel is on hold, confirm your address: bit.ly/pk-77", "You won a free cruise! Reply YES",
             "Final notice: your car warranty expires today"])}], unread=True)
        digits = digits_of(conv["number"])
    else:
        digits = cast.new_number(rng)
    said = phone(digits, rng.randrange(7))
    forms = ["Block {p}", "Block the number {p}", "Add {p} to my blocked numbers", "Stop {p} from texting me by blocking it"]
    kept = list(cast.blocked)
    wrong = cast.new_number(rng)
    return Variant(say(rng, "messages", forms, p=said), cast.setup(),
                   all_(_blocked(digits), *(has("messages.blocked", b) for b in kept)),
                   {"messages.blocked": kept + [said]}, ({"messages.blocked": kept + [phone(wrong)]},
                                                         {"messages.blocked": [said]}),
                   {"number": said, "conversation": conv["with"] if spam else None})


@template(TEMPLATES, "messages.unblock")
def unblock(rng, fresh):
    """Unblock one of the blocked numbers; the others stay blocked."""
    cast = Cast(fresh)
    digits = cast.new_number(rng)
    stored = phone(digits, rng.choice([0, 1, 3]))
    kept = list(cast.blocked)
    cast.blocked.insert(rng.randint(0, len(kept)), stored)
    cast.touched.add("messages")
    forms = ["Unblock {p}", "Remove {p} from my blocked numbers", "Let {p} text me again by unblocking it"]
    return Variant(say(rng, "messages", forms, p=phone(digits, rng.randrange(7))), cast.setup(),
                   all_(not_(_blocked(digits)), *(has("messages.blocked", b) for b in kept)),
                   {"messages.blocked": kept}, ({"messages.blocked": [stored]},), {"number": stored})


def _others_keep(cast: Cast, conv: dict, key: str) -> list[dict]:
    # the rows beside it keep their flag (truthy or not), so a tap on the wrong one fails
    out = []
    for c in cast.conversations:
        if c["id"] != conv["id"]:
            out.append(truthy(f"{_at(c['id'])}.{key}") if c.get(key) else not_(truthy(f"{_at(c['id'])}.{key}")))
    return out


@template(TEMPLATES, "messages.delete")
def delete(rng, fresh):
    """Delete one conversation; the others stay."""
    cast, conv, _, name, _ = _talk(rng, fresh)
    forms = ["Delete the conversation with {n}", "Delete my chat with {n}", "Remove the whole conversation with {n}"]
    n = len(cast.conversations)
    wrong = next(c for c in cast.conversations if c["id"] != conv["id"])
    return Variant(say(rng, "messages", forms, n=name), cast.setup(),
                   all_(not_(truthy(_at(conv["id"]))), eq(f"{CONVS}.length", n - 1)),
                   {CONVS: [c for c in cast.conversations if c["id"] != conv["id"]]},
                   ({CONVS: [c for c in cast.conversations if c["id"] != wrong["id"]]},
                    _edit(cast, conv["id"], lambda c: c.update(archived=True))), {"conversation": conv, "name": name})


FLAGS = {"archived": (["Archive the conversation with {n}", "Archive my chat with {n}", "Move {n}'s conversation to the archive"], []),
         "pinned": (["Pin the conversation with {n}", "Pin my chat with {n} to the top"],
                    ["Unpin the conversation with {n}", "Stop pinning my chat with {n}"]),
         "muted": (["Turn off notifications for the conversation with {n}", "Mute my chat with {n}"],
                   ["Turn notifications back on for {n}", "Unmute the conversation with {n}"])}


@template(TEMPLATES, "messages.flag")
def flag(rng, fresh):
    """Archive, pin or unpin, mute or unmute one conversation; the others keep their flags."""
    key = rng.choice(sorted(FLAGS))
    on_forms, off_forms = FLAGS[key]
    want = not off_forms or rng.random() < 0.6
    cast, conv, _, name, _ = _talk(rng, fresh)
    if not want:
        conv[key] = True
    flagged = (lambda c: c.update({key: want}))
    wrong = next(c for c in cast.conversations if c["id"] != conv["id"] and bool(c.get(key)) != want)
    is_set = truthy(f"{_at(conv['id'])}.{key}") if want else not_(truthy(f"{_at(conv['id'])}.{key}"))
    check = all_(truthy(_at(conv["id"])), is_set, *_others_keep(cast, conv, key))
    near = [_edit(cast, wrong["id"], lambda c: c.update({key: want}))]
    if key == "muted" and want:
        near.append({"messages.blocked": cast.blocked + [conv["number"]]})
    return Variant(say(rng, "messages", on_forms if want else off_forms, n=name), cast.setup(), check,
                   _edit(cast, conv["id"], flagged), tuple(near), {"conversation": conv, "name": name, "key": key,
                                                                     "on": want})


@template(TEMPLATES, "messages.star")
def star(rng, fresh):
    """Star (or unstar) one message of a conversation; the other messages stay as they were."""
    want = rng.random() < 0.7
    cast, conv, person, name, _ = _talk(rng, fresh)
    index = rng.randrange(len(conv["messages"]))
    if not want:
        conv["messages"][index]["starred"] = True
    text = conv["messages"][index]["text"]
    forms = (["Star the message {t} from my chat with {n}", "Star {n}'s message {t}" if person else
              "Star the message {t} from {n}", "Mark the message {t} in my conversation with {n} as starred"] if want else
             ["Unstar the message {t} in my chat with {n}", "Remove the star from the message {t} in the chat with {n}"])
    at = _at(conv["id"])
    if want:
        this = some(f"{at}.messages", fields({"text": text, "starred": True}))
    else:
        this = all_(some(f"{at}.messages", eq("item.text", text)),
                    not_(some(f"{at}.messages", all_(eq("item.text", text), truthy("item.starred")))))
    others = not_(some(f"{at}.messages", all_(truthy("item.starred"), {"ne": ["item.text", text]})))
    near = [_edit(cast, conv["id"], lambda c: c["messages"].pop(index))]
    return Variant(say(rng, "messages", forms, n=name, t=quoted(rng, text)), cast.setup(),
                   all_(this, others, eq(f"{at}.messages.length", len(conv["messages"]))),
                   _edit(cast, conv["id"], lambda c: c["messages"][index].update(starred=want)), tuple(near),
                   {"conversation": conv, "name": name, "index": index, "starred": want})


def _when(rng) -> tuple[str, str, str]:
    """A future date and time the date and time pickers can set: (date, time, how a user says it)."""
    month = rng.choice(["Jun", "Jun", "Jul"])
    day = rng.randint(13, 30) if month == "Jun" else rng.randint(1, 31)
    date = f"{month} {day}"
    hour, minute, ampm = rng.randint(1, 12), rng.randrange(0, 60, 5), rng.choice(["AM", "PM"])
    time = f"{hour}:{minute:02d} {ampm}"
    said = rng.choice([f"on {MONTHS[month]} {day}", f"on {date}"])
    if date == "Jun 13":
        said = rng.choice(["tomorrow", said])
    elif date in WEEKDAYS and rng.random() < 0.5:
        said = f"on {WEEKDAYS[date]}, {MONTHS[month]} {day}"
    spoken = time if minute or rng.random() < 0.5 else f"{hour} {ampm}"
    return date, time, f"{said} at {spoken}"


@template(TEMPLATES, "messages.schedule")
def schedule(rng, fresh):
    """Schedule a text in a conversation for a drawn date and time (not sent now)."""
    cast, conv, _, name, _ = _talk(rng, fresh)
    text = rng.choice(MESSAGES)
    date, time, said = _when(rng)
    forms = ["Schedule a message to {n} saying {t} {w}", "Schedule the text {t} to {n} to be sent {w}",
             "Write {n} {t} but send it {w}"]
    at = _at(conv["id"])
    want = all_(contains("item.text", text), eq("item.date", date), eq("item.time", time))
    flipped = time[:-2] + ("PM" if time.endswith("AM") else "AM")
    scheduled = lambda t: lambda c: c.setdefault("scheduled", []).append({"text": text, "date": date, "time": t})
    return Variant(say(rng, "messages", forms, n=name, t=quoted(rng, text), w=said), cast.setup(),
                   all_(some(f"{at}.scheduled", want), not_(contains(f"{at}.messages", text)),
                        eq(f"{at}.messages.length", len(conv["messages"]))),
                   _edit(cast, conv["id"], scheduled(time)),
                   (_edit(cast, conv["id"], scheduled(flipped)), _edit(cast, conv["id"], _sent(text))),
                   {"conversation": conv, "name": name, "text": text, "date": date, "time": time})
