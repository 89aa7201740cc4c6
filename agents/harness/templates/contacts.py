"""Contacts templates: create, edit a field, favorite, delete, labels (add to, remove from, create,
rename, delete). Every person is drawn and added by the setup, often beside a namesake (the same
first name) whom the task must leave alone."""
from __future__ import annotations

import copy

from .base import (Variant, all_, by_id, contains, eq, has, not_, phone, phone_is, quoted, say, some,
                   template, truthy)
from .people import Cast, digits_of, full
from .pools import COMPANIES, CONTACT_LABELS, email, person

TEMPLATES: list = []
LIST = "contacts.list"


def _cast(rng, fresh, namesake: float = 0.5, **target):
    """(cast, target contact, namesake or None): the target and maybe one with its first name."""
    cast = Cast(fresh)
    goal = cast.add_contact(rng, **target)
    twin = cast.add_contact(rng, first=goal["first"]) if rng.random() < namesake else None
    return cast, goal, twin


def _at(ident) -> str:
    return by_id(LIST, ident)


def _same(twin, *keys) -> list[dict]:
    return [eq(f"{_at(twin['id'])}.{k}", twin[k]) for k in keys] if twin else []


def _with(cast: Cast, ident: int, **change) -> dict:
    """The contact list with one record changed."""
    out = copy.deepcopy(cast.contacts)
    for c in out:
        if c["id"] == ident:
            c.update(change)
    return {LIST: out}


def _without(cast: Cast, ident: int) -> dict:
    return {LIST: [c for c in copy.deepcopy(cast.contacts) if c["id"] != ident]}


@template(TEMPLATES, "contacts.create")
def create(rng, fresh):
    """Create a contact with a drawn name and some of: a number (maybe labeled), an email, a company."""
    cast = Cast(fresh)
    first, last = person(rng, cast.names())
    digits = cast.new_number(rng) if rng.random() < 0.85 else ""
    mail = email(rng, first, last) if not digits or rng.random() < 0.4 else ""
    company = rng.choice(COMPANIES) if rng.random() < 0.35 else ""
    label = rng.choice(["Work", "Home"]) if digits and rng.random() < 0.25 else "Mobile"
    details = []
    if digits:
        said = phone(digits, rng.randrange(7))
        details.append(f"{label.lower()} number {said}" if label != "Mobile" else
                       rng.choice([f"phone number {said}", f"number {said}", f"mobile {said}"]))
    details += [f"email {mail}"] if mail else []
    who = ""
    if company:
        if rng.random() < 0.5 or not details:
            who = f", who works at {company},"
        else:
            details.append(f"company {company}")
    text = f"{first} {last}{who}"
    if details:
        text += " with " + (details[0] if len(details) == 1 else ", ".join(details[:-1]) + " and " + details[-1])
    text = text.rstrip(",")
    forms = ["Create a contact for {x}", "Add a new contact for {x}", "Make a new contact: {x}",
             "Save a new contact, {x}"]
    want = [eq("item.first", first), eq("item.last", last)]
    want += [phone_is("item.phone", digits), eq("item.phone_label", label)] if digits else []
    want += [contains("item.email", mail)] if mail else []
    want += [contains("item.company", company)] if company else []
    new = {"id": cast.contact_id, "first": first, "last": last, "company": company, "phone": said if digits else "",
           "phone_label": label, "email": mail, "email_label": "Home", "labels": [], "favorite": False}
    n = len(cast.contacts)
    near = [{LIST: cast.contacts + [{**new, "last": last[:-1]}]}, {LIST: cast.contacts + [new, new]}]
    if digits:
        near.append({LIST: cast.contacts + [{**new, "phone": phone(digits[:-1] + str(9 - int(digits[-1])))}]})
    if mail or company:
        near.append({LIST: cast.contacts + [{**new, "email": "", "company": ""}]})
    return Variant(say(rng, "contacts", forms, x=text), {},
                   all_(some(LIST, all_(*want)), eq(f"{LIST}.length", n + 1)),
                   {LIST: cast.contacts + [new], "contacts.next_id": cast.contact_id + 1}, tuple(near),
                   {"first": first, "last": last, "phone": said if digits else "", "phone_label": label,
                    "email": mail, "company": company})


@template(TEMPLATES, "contacts.edit")
def edit_field(rng, fresh):
    """Change one contact's phone number, email or company; a namesake's stays as it was."""
    field = rng.choice(["phone", "email", "company"])
    cast, goal, twin = _cast(rng, fresh)
    if field != "phone" and rng.random() < 0.6:
        goal[field] = email(rng, goal["first"], goal["last"]) if field == "email" else rng.choice(COMPANIES)
    name = full(goal)
    if field == "phone":
        digits = cast.new_number(rng)
        value = phone(digits, rng.randrange(7))
        forms = ["Change {n}'s phone number to {v}", "Update the number for {n} to {v}", "Set {n}'s number to {v}"]
        terse = ["{n} has a new number: {v}. Update the contact."]
        check = [phone_is(f"{_at(goal['id'])}.phone", digits), not_(phone_is(f"{_at(goal['id'])}.phone", digits_of(goal["phone"])))]
    elif field == "email":
        value = email(rng, goal["first"], rng.choice(["home", "mail", goal["last"] + "1"]))
        forms = ["Change {n}'s email to {v}", "Set the email address of {n} to {v}", "Update {n}'s email address to {v}"]
        terse = ["New email for {n}: {v}"]
        check = [contains(f"{_at(goal['id'])}.email", value)]
        check += [not_(contains(f"{_at(goal['id'])}.email", goal["email"]))] if goal["email"] else []
    else:
        value = rng.choice([c for c in COMPANIES if c != goal["company"]])
        forms = ["Change {n}'s company to {v}", "Update {n}'s contact: they now work at {v}",
                 "Set the company for {n} to {v}"]
        terse = ["{n} works at {v} now, update the contact."]
        check = [contains(f"{_at(goal['id'])}.company", value)]
        check += [not_(contains(f"{_at(goal['id'])}.company", goal["company"]))] if goal["company"] else []
    check += [eq(f"{_at(goal['id'])}.first", goal["first"]), eq(f"{_at(goal['id'])}.last", goal["last"])]
    near = [_with(cast, goal["id"], **{field: (goal[field] + " " + value).strip() if goal[field] else value[:-2]})]
    if twin:
        near.append(_with(cast, twin["id"], **{field: value}))
    return Variant(say(rng, "contacts", forms, terse, n=name, v=value), cast.setup(),
                   all_(*check, *_same(twin, field)), _with(cast, goal["id"], **{field: value}), tuple(near),
                   {"contact": goal, "field": field, "value": value})


@template(TEMPLATES, "contacts.favorite")
def favorite(rng, fresh):
    """Add a contact to the favorites, or take one out; a namesake keeps its star."""
    want = rng.random() < 0.6
    cast, goal, twin = _cast(rng, fresh, favorite=not want)
    forms = (["Add {n} to my favorites", "Star {n} in my contacts", "Make {n} a favorite contact"] if want else
             ["Remove {n} from my favorites", "Unstar {n}", "Take {n} out of my favorite contacts"])
    wrong = twin or next(c for c in cast.contacts if c["favorite"] != want)
    near = [_with(cast, wrong["id"], favorite=want)]
    return Variant(say(rng, "contacts", forms, n=full(goal)), cast.setup(),
                   all_(eq(f"{_at(goal['id'])}.favorite", want), *_same(twin, "favorite", "first"),
                        eq(f"{_at(wrong['id'])}.favorite", wrong["favorite"])),
                   _with(cast, goal["id"], favorite=want), tuple(near), {"contact": goal, "favorite": want})


@template(TEMPLATES, "contacts.delete")
def delete(rng, fresh):
    """Delete one contact; a namesake and everyone else stay."""
    cast, goal, twin = _cast(rng, fresh, namesake=0.7)
    forms = ["Delete the contact {n}", "Remove {n} from my contacts", "Get rid of {n}'s contact"]
    n = len(cast.contacts)
    wrong = twin or cast.contacts[0]
    keeps = [truthy(_at(twin["id"]))] if twin else []
    return Variant(say(rng, "contacts", forms, n=full(goal)), cast.setup(),
                   all_(not_(truthy(_at(goal["id"]))), *keeps, eq(f"{LIST}.length", n - 1)),
                   _without(cast, goal["id"]), (_without(cast, wrong["id"]),), {"contact": goal})


def _label(rng, cast: Cast, fresh_labels: bool) -> str:
    if fresh_labels:
        name = rng.choice([x for x in CONTACT_LABELS if x not in cast.labels])
        cast.add_label(name)
        return name
    return rng.choice(cast.labels)


@template(TEMPLATES, "contacts.label_add")
def label_add(rng, fresh):
    """Add a contact to a label (one of the phone's or a drawn one the setup made)."""
    cast, goal, twin = _cast(rng, fresh)
    label = _label(rng, cast, rng.random() < 0.5)
    forms = ["Add {n} to the {l} label", "Put {n} in my {l} group", "Label {n} as {l}", "Add the label {l} to {n}"]
    other = rng.choice([x for x in cast.labels if x != label])
    near = [_with(cast, goal["id"], labels=[other])] + ([_with(cast, twin["id"], labels=[label])] if twin else [])
    return Variant(say(rng, "contacts", forms, n=full(goal), l=label), cast.setup(),
                   all_(has(f"{_at(goal['id'])}.labels", label), has("contacts.labels", label),
                        *_same(twin, "labels")),
                   _with(cast, goal["id"], labels=[label]), tuple(near), {"contact": goal, "label": label})


@template(TEMPLATES, "contacts.label_remove")
def label_remove(rng, fresh):
    """Take a contact out of a label; the label and its other member stay."""
    cast = Cast(fresh)
    label = _label(rng, cast, rng.random() < 0.5)
    goal = cast.add_contact(rng, labels=[label])
    mate = cast.add_contact(rng, labels=[label])
    forms = ["Remove {n} from the {l} label", "Take {n} out of {l}", "Remove the {l} label from {n}"]
    return Variant(say(rng, "contacts", forms, n=full(goal), l=label), cast.setup(),
                   all_(eq(f"{_at(goal['id'])}.first", goal["first"]), not_(has(f"{_at(goal['id'])}.labels", label)),
                        has(f"{_at(mate['id'])}.labels", label), has("contacts.labels", label)),
                   _with(cast, goal["id"], labels=[]),
                   (_with(cast, mate["id"], labels=[]), _without(cast, goal["id"])), {"contact": goal, "label": label})


@template(TEMPLATES, "contacts.label_create")
def label_create(rng, fresh):
    """Create a new label, sometimes with a contact put in it."""
    cast = Cast(fresh)
    label = rng.choice([x for x in CONTACT_LABELS if x not in cast.labels])
    member = cast.add_contact(rng) if rng.random() < 0.4 else None
    forms = (["Create a label called {l} and add {n} to it", "Make a new label {l} with {n} in it"] if member else
             ["Create a new contact label called {l}", "Make a label named {l}", "Add a new label called {l}"])
    check = [some("contacts.labels", contains("item", label)), eq("contacts.labels.length", len(cast.labels) + 1)]
    check += [some(f"{_at(member['id'])}.labels", contains("item", label))] if member else []
    effect = {"contacts.labels": cast.labels + [label]}
    if member:
        effect.update(_with(cast, member["id"], labels=[label]))
    return Variant(say(rng, "contacts", forms, l=quoted(rng, label) if rng.random() < 0.5 else label,
                       n=full(member) if member else ""), cast.setup(), all_(*check), effect,
                   ({"contacts.labels": cast.labels + [label[:-2]]}, {"contacts.labels": cast.labels + [label, label + "s"]}),
                   {"label": label, "member": member})


@template(TEMPLATES, "contacts.label_rename")
def label_rename(rng, fresh):
    """Rename a label; its members follow it."""
    cast = Cast(fresh)
    old, new = rng.sample([x for x in CONTACT_LABELS if x not in cast.labels], 2)
    cast.add_label(old)
    members = [cast.add_contact(rng, labels=[old]) for _ in range(rng.randint(1, 2))]
    forms = ["Rename the {o} label to {w}", "Change the name of my {o} label to {w}", "Call the {o} label {w} instead"]
    setup = cast.setup()
    ids = {m["id"] for m in members}
    effect = {"contacts.labels": [x if x != old else new for x in cast.labels],
              LIST: [dict(c, labels=[new]) if c["id"] in ids else c for c in copy.deepcopy(cast.contacts)]}
    return Variant(say(rng, "contacts", forms, o=old, w=new), setup,
                   all_(has("contacts.labels", new), not_(has("contacts.labels", old)),
                        *(has(f"{_at(m['id'])}.labels", new) for m in members)),
                   effect, ({"contacts.labels": cast.labels + [new]},), {"old": old, "new": new})


@template(TEMPLATES, "contacts.label_delete")
def label_delete(rng, fresh):
    """Delete a label and keep its contacts."""
    cast = Cast(fresh)
    label = _label(rng, cast, rng.random() < 0.6)
    members = [cast.add_contact(rng, labels=[label]) for _ in range(rng.randint(1, 2))]
    forms = ["Delete the {l} label", "Remove the label {l} but keep the contacts", "Get rid of my {l} label"]
    n = len(cast.contacts)
    kept = copy.deepcopy(cast.contacts)
    for c in kept:
        c["labels"] = [x for x in c["labels"] if x != label]
    return Variant(say(rng, "contacts", forms, l=label), cast.setup(),
                   all_(not_(has("contacts.labels", label)), eq(f"{LIST}.length", n),
                        *(truthy(_at(m["id"])) for m in members),
                        *(not_(has(f"{_at(m['id'])}.labels", label)) for m in members)),
                   {"contacts.labels": [x for x in cast.labels if x != label], LIST: kept},
                   ({"contacts.labels": [x for x in cast.labels if x != label],
                     LIST: [c for c in kept if c["id"] != members[0]["id"]]},), {"label": label, "members": members})
