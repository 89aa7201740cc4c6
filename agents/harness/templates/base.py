"""What a task template is, and the small tools every template uses: phrasing, predicates, state edits.

A template is a function ``make(rng, fresh) -> Variant`` (``fresh``: the fresh phone's state) whose
docstring's first line says what kind of task it makes. The Variant carries the instruction, the
setup (a start where the task is possible and not yet done), the check, and — for the harness's own
tests — the intended change (``effect``) and plausible wrong outcomes (``near``), both as
``{dotted path: value}`` on top of the start state.
"""
from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from agents.phone.device.paths import get, merge

APP_NAMES = {"settings": ("Settings",), "clock": ("Clock", "Google Clock"),
             "contacts": ("Contacts", "Google Contacts"), "messages": ("Messages", "Google Messages")}
# how the same request is framed: bare, polite, or with the app named ({c}: the request, lower-cased)
FRAMES = ("{C}.", "{C}.", "Please {c}.", "Could you {c}?", "Can you {c} for me?", "I need you to {c}.",
          "In {app}, {c}.", "{C} in {app}.", "Open {app} and {c}.", "Using the {app} app, {c}.")


@dataclass(frozen=True)
class Variant:
    instruction: str
    setup: dict
    check: dict
    effect: dict                       # the intended change: {path: value} over the start state
    near: tuple[dict, ...] = ()        # wrong outcomes the check must reject, same form as effect
    params: dict = field(default_factory=dict)  # the drawn values (for UI solutions and reports)


@dataclass(frozen=True)
class Template:
    kind: str                          # "<app>.<what>", e.g. "clock.alarm_new"
    app: str
    doc: str                           # one line: the kind of task
    make: Callable[[random.Random, dict], Variant]


def template(registry: list, kind: str):
    """Registers ``make`` under ``kind``; its docstring's first line is the template's doc."""
    def wrap(make):
        doc = (make.__doc__ or "").strip().splitlines()
        if not doc:
            raise ValueError(f"template {kind}: no docstring")
        registry.append(Template(kind, kind.split(".")[0], doc[0], make))
        return make
    return wrap


# -- phrasing ------------------------------------------------------------------------------------
def say(rng: random.Random, app: str, forms: list[str], terse: list[str] = (), **values: Any) -> str:
    """One phrasing of a request: a verb-first ``form`` framed plainly, politely or with the app
    named, or now and then one of the ``terse`` forms as it is."""
    if terse and rng.random() < 0.2:
        return _cap(rng.choice(terse).format(**values))
    core = rng.choice(forms).format(**values)
    frame = rng.choice(FRAMES)
    said = frame.format(C=_cap(core), c=core[:1].lower() + core[1:], app=rng.choice(APP_NAMES[app]))
    return said[:-1] if said.endswith("..") else said  # "… at 3:30 p.m.."


def quoted(rng: random.Random, text: str) -> str:
    return f'"{text}"' if "'" in text or rng.random() < 0.5 else f"'{text}'"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# -- predicates (agents.phone.device.checks) ------------------------------------------------------------
def eq(path: str, value: Any) -> dict:
    return {"eq": [path, value]}


def ne(path: str, value: Any) -> dict:
    return {"ne": [path, value]}


def has(path: str, value: Any) -> dict:
    return {"in": [path, value]}


def contains(path: str, text: str) -> dict:
    return {"contains": [path, text]}


def truthy(path: str) -> dict:
    return {"truthy": path}


def all_(*preds: dict) -> dict:
    return {"all": list(preds)}


def any_(*preds: dict) -> dict:
    return {"any": list(preds)}


def not_(pred: dict) -> dict:
    return {"not": pred}


def some(path: str, pred: dict) -> dict:
    return {"some": [path, pred]}


def by_id(path: str, ident: Any) -> str:
    """The element of the list at ``path`` with that id, however the list is reordered."""
    return f"{path}[id='{ident}']"


def fields(values: dict, prefix: str = "item") -> dict:
    """Every field of ``values`` equal at ``prefix`` (an alarm's hour, minute, ampm, …)."""
    return all_(*(eq(f"{prefix}.{k}", v) for k, v in values.items()))


# -- phone numbers -------------------------------------------------------------------------------
PHONE_STYLES = ("({a}) {e}-{l}", "{a}-{e}-{l}", "{a}.{e}.{l}", "+1 {a}-{e}-{l}", "{a}{e}{l}",
                "+1 ({a}) {e}-{l}", "{a} {e} {l}")


def phone(digits: str, style: int = 0) -> str:
    """A 10-digit number written in one of the ways people write them."""
    return PHONE_STYLES[style].format(a=digits[:3], e=digits[3:6], l=digits[6:])


def phone_is(path: str, digits: str) -> dict:
    """The text at ``path`` is that number, in whatever punctuation it was typed."""
    e, l = digits[3:6], digits[6:]
    return all_(any_(*(contains(path, f"{e}{sep}{l}") for sep in ("-", "", " ", "."))),
                contains(path, digits[:3]))


# -- state ---------------------------------------------------------------------------------------
def start_of(fresh: dict, setup: dict) -> dict:
    """The state a task starts from: the fresh state with the setup applied, as the phone does."""
    return merge(copy.deepcopy(fresh), copy.deepcopy(setup))


def edit(start: dict, path: str, change: Callable[[Any], Any]) -> dict:
    """``{path: new}`` where new is ``change`` applied to a copy of the value at ``path`` (it may
    change the copy in place and return None)."""
    value = copy.deepcopy(get(start, path))
    out = change(value)
    return {path: value if out is None else out}


def next_id(items: list[dict]) -> int:
    return max((int(i.get("id", 0)) for i in items), default=0) + 1


def signature(instruction: str, setup: dict, check: dict) -> str:
    return json.dumps([instruction, setup, check], sort_keys=True, ensure_ascii=False)
