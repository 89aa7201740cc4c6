"""Value-entry widgets and their macros: Material's time picker (a clock dial or text fields, and
AM/PM) and a keypad of digits (a timer). Recognized from what a screen shows, the same way on a
real phone; each macro gives the one next tap (or typing) that moves the widget toward the value,
or None once it shows it — the agent re-reads the screen between taps, so a tap that did not
land is simply tried again.
"""
from __future__ import annotations

import re
from datetime import date, timedelta

from .screen import Element, Screen
from .slots import MONTHS

DIGITS = [str(d) for d in range(10)]
MONTH_YEAR = re.compile(rf"({'|'.join(m.capitalize() for m in MONTHS)}) (\d{{4}})")   # a calendar's header
DAY = re.compile(r"\d{1,2}")


def entry_kind(screen: Screen) -> str:
    """"time" for a time picker, "date" for a calendar, "digits" for a keypad, "" for none."""
    labels = {e.label for e in screen.elements}
    rids = " ".join(e.rid for e in screen.elements)
    if _month(screen) is not None and len(_days(screen)) >= 7:
        return "date"             # (a month's days to tap; those greyed out are not listed)
    if ("hour" in rids and "minute" in rids) or ({"AM", "PM"} <= labels and len(labels & set(map(str, range(1, 13)))) >= 10):
        return "time"
    if len(labels & set(DIGITS)) == 10:
        return "digits"
    return ""


def _find(screen: Screen, pred) -> Element | None:
    return next((e for e in screen.elements if pred(e)), None)


def time_step(screen: Screen, hour24: int, minute: int) -> tuple[str, Element, str] | None:
    """The next (action, element, text) toward hour24:minute on a time picker, None when set."""
    h12 = hour24 % 12 or 12
    ampm = "AM" if hour24 < 12 else "PM"
    hour_field = _find(screen, lambda e: e.editable and "hour" in e.rid)
    minute_field = _find(screen, lambda e: e.editable and "minute" in e.rid)
    if hour_field is not None and minute_field is not None:        # text input mode
        if _num(hour_field.text) != h12:
            return "type", hour_field, str(h12)
        if _num(minute_field.text) != minute:
            return "type", minute_field, f"{minute:02d}"
        return _period(screen, ampm)
    hour_chip = _find(screen, lambda e: "hour" in e.rid and not e.editable)
    minute_chip = _find(screen, lambda e: "minute" in e.rid and not e.editable)
    if hour_chip is None or minute_chip is None:
        return None
    dial = [e for e in screen.elements if re.fullmatch(r"\d{1,2}", e.label) and e is not hour_chip
            and e is not minute_chip and not e.editable]
    showing_minutes = any(e.label == "00" or e.label == "05" for e in dial)
    if _num(hour_chip.label) != h12:
        if showing_minutes:
            return "tap", hour_chip, ""
        target = _find(screen, lambda e: e in dial and _num(e.label) == h12)
        return ("tap", target, "") if target is not None else None
    if _num(minute_chip.label) != minute:
        if minute % 5:                # not on the dial: type it in the text mode
            mode = _find(screen, lambda e: "mode" in e.rid or "text input" in e.label.lower())
            return ("tap", mode, "") if mode is not None else None
        if not showing_minutes:
            return "tap", minute_chip, ""
        target = _find(screen, lambda e: e in dial and _num(e.label) == minute and len(e.label) == 2)
        return ("tap", target, "") if target is not None else None
    return _period(screen, ampm)


def _month(screen: Screen) -> tuple[int, int] | None:
    """The (year, month) a calendar shows in its header ("June 2024")."""
    for text in [e.label for e in screen.elements] + list(screen.texts):
        m = MONTH_YEAR.fullmatch(text.strip())
        if m:
            return int(m.group(2)), MONTHS.index(m.group(1).lower()) + 1
    return None


def _days(screen: Screen) -> list[Element]:
    """A calendar's days that can be tapped."""
    return [e for e in screen.elements if DAY.fullmatch(e.label) and e.clickable]


def date_step(screen: Screen, month: int | None, day: int | None) -> tuple[str, Element, str] | None:
    """The next tap toward a date on a Material calendar (month 1-12, day), None when it is the
    one chosen; ``month`` None for tomorrow: the day after the first one not greyed out (a
    scheduling calendar greys out the past, so that one is today)."""
    shown = _month(screen)
    if shown is None:
        return None
    year, now = shown
    days = _days(screen)
    if month is None:
        if not any(e.checked for e in days):
            return None           # (not the month it opened on: today is not to be read here)
        first = min(int(e.label) for e in days)
        after = date(year, now, first) + timedelta(days=1)
        month, day = after.month, after.day
    if month != now:
        ahead = (month - now) % 12 < 6          # (December to January is ahead)
        arrow = _find(screen, lambda e: re.search("next month" if ahead else "previous month", e.label, re.I))
        return ("tap", arrow, "") if arrow is not None else None
    target = _find(screen, lambda e: e in days and int(e.label) == day)
    if target is None or target.checked:
        return None
    return "tap", target, ""


def _period(screen: Screen, ampm: str) -> tuple[str, Element, str] | None:
    button = _find(screen, lambda e: e.label == ampm)
    if button is not None and button.checkable and not button.checked:
        return "tap", button, ""
    return None


def duration_digits(seconds: int) -> str:
    """What a timer keypad takes for a duration: HHMMSS without leading zeros."""
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return str(int(f"{h:02d}{m:02d}{s:02d}"))


def shown_digits(screen: Screen) -> str | None:
    """The digits a keypad's display shows ("00h 01m 30s" -> "130"), None without a display."""
    for text in screen.texts + [e.label for e in screen.elements]:
        m = re.fullmatch(r"(\d+)h\s*(\d+)m\s*(\d+)s", text.strip())
        if m:
            return str(int("".join(m.groups())))
    return None


def digits_step(screen: Screen, want: str) -> tuple[str, Element, str] | None:
    """The next key of ``want`` on a keypad, None when the display shows it (or cannot)."""
    shown = shown_digits(screen)
    if shown is None:
        return None
    if shown == want:
        return None
    if want.startswith(shown) or shown == "0":
        nxt = want[len(shown) if shown != "0" else 0]
        key = _find(screen, lambda e: e.label == nxt)
        return ("tap", key, "") if key is not None else None
    return None


def _num(text: str) -> int | None:
    try:
        return int(text.strip())
    except (ValueError, AttributeError):
        return None
