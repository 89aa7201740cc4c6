"""Fresh task variants, as AndroidWorld draws them: each app has templates for the kinds of task it
allows (agents/harness/templates/), and a draw fills them with random values — names, numbers,
times, texts — phrased one of several ways, with a setup that makes the task possible and not yet
done and a check that tells success from near misses. The same seed gives the same tasks.
"""
from __future__ import annotations

import random

from agents.phone.device.checks import Task

from .templates import clock, contacts, messages, settings
from .templates.base import Template, Variant, signature

TEMPLATES: dict[str, list[Template]] = {"settings": settings.TEMPLATES, "clock": clock.TEMPLATES,
                                        "contacts": contacts.TEMPLATES, "messages": messages.TEMPLATES}
APPS = tuple(TEMPLATES)
ATTEMPTS = 25  # draws of one template before a slot moves on to the next template


def templates(app: str | None = None) -> list[Template]:
    return [t for a in ([app] if app else APPS) for t in TEMPLATES[a]]


def make(template: Template, seed: int | str, fresh_state: dict) -> Variant:
    """One variant of ``template`` for ``seed`` (its own random stream, whatever else is drawn)."""
    return template.make(random.Random(f"{template.kind}/{seed}"), fresh_state)


def draw(apps: list[str] | None, k: int, seed: int, fresh_state: dict) -> list[Task]:
    """``k`` distinct tasks per app (``apps``: None for every app), spread evenly over each app's
    templates in a seeded order; task ids are ``<kind>@<seed>.<n>``. ``fresh_state``: the fresh
    phone's state (``PhoneControl.state()`` right after a plain reset), which setups build on."""
    return [task for _, _, task in draw_variants(apps, k, seed, fresh_state)]


def draw_variants(apps: list[str] | None, k: int, seed: int,
                  fresh_state: dict) -> list[tuple[Template, Variant, Task]]:
    """As ``draw``, with each task's template and variant (effect, near misses, drawn values)."""
    unknown = sorted(set(apps or ()) - set(APPS))
    if unknown:
        raise ValueError(f"no templates for {', '.join(unknown)} (apps: {', '.join(APPS)})")
    if k < 0:
        raise ValueError(f"k must be at least 0, got {k}")
    out = []
    for app in apps or APPS:
        order = list(TEMPLATES[app])
        random.Random(f"{seed}/{app}").shuffle(order)
        seen: set[str] = set()
        for n in range(k):
            found = _fresh(order[n % len(order):] + order[:n % len(order)], f"{seed}.{n}", fresh_state, seen)
            if found is None:
                break  # the app's templates cannot make that many distinct tasks
            template, variant = found
            task = Task(app=app, instruction=variant.instruction, check=variant.check, setup=variant.setup,
                        id=f"{template.kind}@{seed}.{n}")
            out.append((template, variant, task))
    return out


def _fresh(order: list[Template], slot: str, fresh_state: dict, seen: set[str]):
    """The first variant not drawn before, trying each template ``ATTEMPTS`` times in turn."""
    for template in order:
        for attempt in range(ATTEMPTS):
            variant = make(template, f"{slot}/{attempt}", fresh_state)
            key = signature(variant.instruction, variant.setup, variant.check)
            if key not in seen:
                seen.add(key)
                return template, variant
    return None
