"""Languages as a phone lists them: each in its own name ("Dansk", "한국어", "Français (Canada)"),
while a task names them in its own language ("Danish", "Korean", "French (Canada)"). CLDR's
names (the babel package) map one onto the other, for every language and region it knows; a
picker that lists a language first and its regions after ("Français", then "Canada") is
matched a step at a time."""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _names() -> tuple[dict[str, frozenset[str]], dict[str, tuple[str, frozenset[str]]]]:
    """(English name -> own names; English "Language (Region)" -> (own language name, own
    region names))."""
    from babel import Locale, localedata

    own: dict[str, set[str]] = {}
    parts: dict[str, tuple[str, set[str]]] = {}
    for code in localedata.locale_identifiers():
        try:
            loc = Locale.parse(code)
            pairs = [(loc.get_display_name("en"), loc.get_display_name(code)),
                     (loc.get_language_name("en"), loc.get_language_name(code))]
            region = loc.territories.get(loc.territory) if loc.territory else None
        except Exception:        # a locale CLDR has no names for: nothing to map
            continue
        for english, mine in pairs:
            if english and mine:
                own.setdefault(english.lower(), set()).add(mine.lower())
        if region and pairs[0][0] and pairs[1][1]:
            lang, regions = parts.setdefault(pairs[0][0].lower(), (pairs[1][1].lower(), set()))
            regions.add(region.lower())
    return ({k: frozenset(v) for k, v in own.items()},
            {k: (lang, frozenset(r)) for k, (lang, r) in parts.items()})


def autonyms(name: str) -> frozenset[str]:
    """How the language ``name`` (in English, with a region or not) calls itself, lower case;
    empty for anything that is not a language's name."""
    return _names()[0].get(name.strip().lower(), frozenset())


def same_language(name: str, label: str) -> float:
    """1 when a list row ``label`` is the language the task calls ``name``; 0.8 when it is one
    step of it in a two-level picker (its language, or its region in the language's words); 0."""
    own = autonyms(name)
    label = label.strip().lower()
    # (a language named without a region is any of its regions: "German", "Deutsch (Deutschland)")
    if own and (label in own or "(" not in name and label.split(" (")[0] in own):
        return 1.0
    step = _names()[1].get(name.strip().lower())
    if step is not None and (label == step[0] or label in step[1]):
        return 0.8
    return 0.0
