"""How a user solves each drawn task through the virtual phone's screens: per template kind, the taps,
long presses, swipes and typing that its drawn values call for (played with phone_ui's helpers:
elements are found by their text or content-desc in the dump, as an agent finds them)."""
from __future__ import annotations

import datetime
import xml.etree.ElementTree as ET

from support import phone_ui
from support.phone_ui import bounds, centre, dump, find, long_press, nodes, scroll, texts

from agents.harness.templates.base import Variant

DEL = ("key", "KEYCODE_DEL")
WIFI = "Wi\u2011Fi"   # Settings writes Wi-Fi with a non-breaking hyphen, like AOSP
TEXT_MODE = "Switch to text input mode for the time input."


def dels(n: int) -> list:
    return [DEL] * n


def reveal(phone, label: str, max_scrolls: int = 12) -> ET.Element:
    """The element showing ``label``, scrolling the list down to it."""
    for _ in range(max_scrolls + 1):
        node = find(phone, label)
        if node is not None:
            return node
        before = phone.dump_ui()
        scroll(phone)
        if phone.dump_ui() == before:
            break
    raise AssertionError(f"no element {label!r} on screen: {texts(phone)}")


def near(phone, label: str, want) -> ET.Element:
    """The element matching ``want`` inside the nearest container around ``label`` that has one
    (an alarm card's switch, a blocked number's Unblock button)."""
    reveal(phone, label)
    root = dump(phone)
    up = {child: parent for parent in root.iter("node") for child in parent}
    node = next(n for n in nodes(root) if label in (n.get("text"), n.get("content-desc")))
    while node in up:
        node = up[node]
        hit = next((n for n in node.iter("node") if want(n)), None)
        if hit is not None:
            return hit
    raise AssertionError(f"nothing next to {label!r}")


def card(phone, label: str, rid: str) -> None:
    phone.tap(*centre(near(phone, label, lambda n: n.get("resource-id", "").endswith(f"id/{rid}"))))


def beside(phone, label: str, desc: str) -> None:
    phone.tap(*centre(near(phone, label, lambda n: n.get("content-desc") == desc)))


def by_id(phone, rid: str) -> None:
    node = next(n for n in nodes(dump(phone)) if n.get("resource-id", "").endswith(f"id/{rid}"))
    phone.tap(*centre(node))


def nth(phone, label: str, n: int) -> None:
    hits = [x for x in nodes(dump(phone)) if label in (x.get("text"), x.get("content-desc"))]
    phone.tap(*centre(hits[n]))


def slide(phone, desc: str, up: bool) -> None:
    node = next(n for n in nodes(dump(phone)) if n.get("content-desc") == desc and n.get("class", "").endswith("SeekBar"))
    left, top, right, bottom = bounds(node)
    phone.tap(right - 43 if up else left + 43, (top + bottom) // 2)


def swipe_away(phone, label: str) -> None:
    _, y = centre(reveal(phone, label))
    phone.swipe(900, y, 150, y, 250)


def long_reveal(phone, label: str) -> None:
    reveal(phone, label)
    long_press(phone, label)


MORE = {"card": card, "beside": beside, "id": by_id, "nth": nth, "slide": slide, "swipe": swipe_away,
        "long": long_reveal}


def play(phone, steps: list) -> None:
    phone_ui.solve(phone, steps, MORE)


# -- Settings ------------------------------------------------------------------------------------
SWITCH_PATHS = {
    "wifi": ["Network & internet", "Internet", WIFI], "airplane_mode": ["Network & internet", "Airplane mode"],
    "hotspot": ["Network & internet", "Hotspot & tethering", "Wi\u2011Fi hotspot"],
    "data_saver": ["Network & internet", "Data Saver", "Use Data Saver"],
    "bluetooth": ["Connected devices", "Connection preferences", "Bluetooth", "Use Bluetooth"],
    "nfc": ["Connected devices", "Connection preferences", "NFC"], "location": ["Location", "Use location"],
    "battery_percentage": ["Battery", "Battery percentage"], "battery_saver": ["Battery", "Battery Saver", "Use Battery Saver"],
    "dark_theme": ["Display", "Dark theme"], "adaptive_brightness": ["Display", "Adaptive brightness"],
    "auto_rotate": ["Display", "Auto-rotate screen"], "smooth_display": ["Display", "Smooth Display"],
    "screen_attention": ["Display", "Screen timeout", ("nth", "Screen attention", 1)],
    "bold_text": ["Display", "Display size and text", "Bold text"],
    "high_contrast_text": ["Display", "Display size and text", "High contrast text"],
    "themed_icons": ["Wallpaper & style", "Themed icons"]}
PAGE_PATHS = {"battery_usage": ["Battery", "Battery usage"], "storage": ["Storage"], "about": ["About phone"],
              "location": ["Location"], "notifications": ["Notifications"], "default_apps": ["Apps", "Default apps"],
              "sound": ["Sound & vibration"], "languages": ["System", "Languages"], "accessibility": ["Accessibility"],
              "wellbeing": ["Digital Wellbeing & parental controls"]}
SOUND_ROWS = {"ringtone": "Phone ringtone", "notification_sound": "Default notification sound",
              "alarm_sound": "Default alarm sound"}
VOLUME_DESCS = {"media": "Media volume", "call": "Call volume", "ring": "Ring & notification volume",
                "alarm": "Alarm volume"}
LANGS = ["Settings", "System", "Languages", "System languages"]


def settings_steps(kind: str, p: dict, v: Variant) -> list:
    s = {
        "switch": lambda: SWITCH_PATHS[p["key"]],
        "screen_timeout": lambda: ["Display", "Screen timeout", p["value"]],
        "default_browser": lambda: ["Apps", "Default apps", "Browser app", p["browser"]],
        "sound": lambda: ["Sound & vibration", SOUND_ROWS[p["kind"]], p["category"], p["name"]],
        "open_page": lambda: PAGE_PATHS[p["page"]],
        "rename_device": lambda: ["About phone", "Device name", *dels(len(p["was"])), ("type", p["name"]), "OK"],
        "font_size": lambda: ["Display", "Display size and text"] + (
            ["Make larger"] * (p["step"] - p["was"]) if p["step"] > p["was"] else ["Make smaller"] * (p["was"] - p["step"])),
        "display_size": lambda: ["Display", "Display size and text"] + [
            ("nth", "Make larger" if p["step"] > p["was"] else "Make smaller", 1)] * abs(p["step"] - p["was"]),
        "volume": lambda: ["Sound & vibration", ("slide", VOLUME_DESCS[p["stream"]], p["up"])],
        "bluetooth_pair": lambda: ["Connected devices", "Pair new device", p["device"], "Pair"],
        "wallpaper": lambda: ["Wallpaper & style", "Change wallpaper", p["category"], p["title"], "Set wallpaper",
                              {"home": "Home screen", "lock": "Lock screen", "both": "Home and lock screens"}[p["where"]]],
        "update_check": lambda: ["System", "System update", "Check for update"],
        "wifi_connect": lambda: ["Network & internet", "Internet"] + ([WIFI] if v.setup.get("settings.wifi") is False else [])
                                + [p["network"]] + ([("type", p["password"]), "Connect"] if p["password"] else []),
    }
    if kind == "language_add":
        steps = LANGS[1:] + ["Add a language", "Search", ("type", p["listed"][:min(3, len(p["listed"]) - 1)]), p["listed"]]
        return ["Settings"] + steps + ([p["region"]] if p["region"] else []) + ["Cancel"]
    if kind == "language_remove":
        return LANGS + ["More options", "Remove", p["value"], "Remove", "OK"]
    return ["Settings"] + s[kind]()


# -- Clock ---------------------------------------------------------------------------------------
def shown(alarm: dict) -> str:
    return f"{alarm['hour']}:{alarm['minute']:02d} {alarm['ampm']}"


def ref(alarm: dict) -> str:
    return alarm["label"] or shown(alarm)


def typed_time(hour: int, minute: int, ampm: str, was_hour: str, was_minute: str) -> list:
    """The time picker in text mode: clear and type the hour, then the minute, then AM/PM, OK."""
    return [TEXT_MODE, ("id", "material_hour_text_input"), *dels(len(was_hour)), ("type", str(hour)),
            ("id", "material_minute_text_input"), *dels(len(was_minute)), ("type", f"{minute:02d}"), ampm, "OK"]


def timer_digits(seconds: int) -> list:
    h, rest = divmod(seconds, 3600)
    return list(str(int(f"{h:02d}{rest // 60:02d}{rest % 60:02d}")))


def tab(name: str, now: str) -> list:
    return [] if now == name.lower() else [name]


def clock_steps(kind: str, p: dict, v: Variant) -> list:
    a = p.get("alarm")
    if kind == "alarm_new":
        label = ["Add label", ("type", a["label"]), "OK"] if a["label"] else []
        return ["Clock", "Add alarm", *typed_time(a["hour"], a["minute"], a["ampm"], "9", "41"), *label]
    if kind == "alarm_switch":
        return ["Clock", ("card", ref(a), "onoff")]
    if kind == "alarm_delete":
        return ["Clock", ("card", ref(a), "arrow"), "Delete"]
    if kind == "alarm_time":
        h, m, ampm = p["to"]
        return ["Clock", shown(a), *typed_time(h, m, ampm, str(a["hour"]), f"{a['minute']:02d}")]
    if kind == "alarm_label":
        return ["Clock", ("card", ref(a), "arrow"), "Add label", ("type", p["label"]), "OK"]
    if kind == "alarm_days":
        flip = [d for d in ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat") if (d in a["days"]) != (d in p["days"])]
        names = {"Sun": "Sunday", "Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
                 "Fri": "Friday", "Sat": "Saturday"}
        return ["Clock", ("card", ref(a), "arrow"), *(names[d] for d in flip)]
    if kind == "alarm_vibrate":
        return ["Clock", ("card", ref(a), "arrow"), "Vibrate"]
    if kind == "timer_start":
        label = ["Add label", ("type", p["label"]), "OK"] if p["label"] else []
        return ["Clock", "Timer", *timer_digits(p["seconds"]), "Start", *label]
    if kind == "timer_control":
        button = {"pause": "Pause", "resume": "Start", "delete": "Delete", "add_minute": "+1:00", "reset": "Reset"}
        return ["Clock", *tab("Timer", p["tab"]), button[p["op"]]]
    if kind == "stopwatch":
        button = {"start": "Start", "resume": "Start", "stop": "Pause", "reset": "Reset", "lap": "Lap"}
        return ["Clock", *tab("Stopwatch", p["tab"]), button[p["op"]]]
    if kind == "city_add":
        return ["Clock", "Clock", "Add city", ("type", p["city"][:4].lower()), p["city"]]
    if kind == "city_remove":
        return ["Clock", "Clock", ("swipe", p["city"])]
    raise KeyError(kind)


# -- Contacts ------------------------------------------------------------------------------------
def name_of(c: dict) -> str:
    return f"{c['first']} {c['last']}"


def replace(current: str, hint: str, value: str) -> list:
    """An editor field: tap it (by its text, or its hint when empty), clear it, type the new value."""
    return [current or hint, *dels(len(current)), ("type", value)]


def contacts_steps(kind: str, p: dict, v: Variant) -> list:
    c = p.get("contact")
    if kind == "create":
        steps = ["Contacts", "Create contact", ("type", p["first"]), "Last name", ("type", p["last"])]
        steps += ["Company", ("type", p["company"])] if p["company"] else []
        steps += ["Phone", ("type", p["phone"])] if p["phone"] else []
        steps += ["Phone label Mobile", p["phone_label"]] if p["phone_label"] != "Mobile" else []
        steps += ["Email", ("type", p["email"])] if p["email"] else []
        return steps + ["Save"]
    if kind == "edit":
        hint = {"phone": "Phone", "email": "Email", "company": "Company"}[p["field"]]
        return ["Contacts", name_of(c), "Edit contact", *replace(c[p["field"]], hint, p["value"]), "Save"]
    if kind == "favorite":
        return ["Contacts", name_of(c), "Add to favorites" if p["favorite"] else "Remove from favorites"]
    if kind == "delete":
        return ["Contacts", name_of(c), "More options", "Delete", "Delete"]
    if kind == "label_add":
        return ["Contacts", name_of(c), "Add to label", p["label"]]
    if kind == "label_remove":
        return ["Contacts", name_of(c), f"Remove {p['label']}"]
    if kind == "label_create":
        member = [("id", "menu_add"), name_of(p["member"]), "Add contacts"] if p["member"] else []
        return ["Contacts", "Fix & manage", "Create label", ("type", p["label"]), "OK", *member]
    if kind == "label_rename":
        return ["Contacts", "Fix & manage", p["old"], "More options", "Rename label", *dels(len(p["old"])),
                ("type", p["new"]), "OK"]
    if kind == "label_delete":
        return ["Contacts", "Fix & manage", p["label"], "More options", "Delete label", "Delete"]
    raise KeyError(kind)


# -- Messages ------------------------------------------------------------------------------------
def send(text: str, button: str = "Send SMS") -> list:
    return ["Text message", ("type", text), button]


def picked_date(date: str) -> list:
    month, day = date.split()
    when = datetime.date(2024, 6 if month == "Jun" else 7, int(day))
    return (["Change to next month"] if month == "Jul" else []) + [f"{when:%a}, {month} {int(day)}"]


def picked_time(time: str) -> list:
    clock, ampm = time.split()
    hour, minute = clock.split(":")
    return [f"{hour} o'clock", f"{int(minute)} minutes", ampm]


def messages_steps(kind: str, p: dict, v: Variant) -> list:
    conv = p.get("conversation")
    if kind == "send_existing":
        return ["Messages", conv["with"], *send(p["text"])]
    if kind == "send_contact":
        c = p["contact"]
        return ["Messages", "Start chat", ("type", c["first"]), name_of(c), *send(p["text"])]
    if kind == "send_number":
        return ["Messages", "Start chat", ("type", p["number"]), f"Send to {p['number']}", *send(p["text"])]
    if kind == "block":
        if p["conversation"]:
            return ["Messages", p["conversation"], "More options", "Block & report spam", "Block"]
        return ["Messages", "More options", "Spam & blocked", "More options", "Blocked numbers", "Add a number",
                ("type", p["number"]), "Block"]
    if kind == "unblock":
        return ["Messages", "More options", "Spam & blocked", "More options", "Blocked numbers",
                ("beside", p["number"], "Unblock"), "Unblock"]
    if kind == "delete":
        return ["Messages", conv["with"], "More options", "Delete", "Delete"]
    if kind == "flag":
        key, on = p["key"], p["on"]
        if key == "archived":
            return ["Messages", conv["with"], "More options", "Archive"]
        if key == "pinned":
            return ["Messages", ("long", conv["with"]), "Pin" if on else "Unpin"]
        return ["Messages", conv["with"], "More options", "Details", "Notifications"]
    if kind == "star":
        text = conv["messages"][p["index"]]["text"]
        return ["Messages", conv["with"], ("long", text), "Star" if p["starred"] else "Unstar"]
    if kind == "schedule":
        return ["Messages", conv["with"], "Text message", ("type", p["text"]), ("long", "Send SMS"), "Pick date & time",
                *picked_date(p["date"]), "OK", *picked_time(p["time"]), "OK", "Schedule message"]
    raise KeyError(kind)


STEPS = {"settings": settings_steps, "clock": clock_steps, "contacts": contacts_steps, "messages": messages_steps}


def solution(kind: str, variant: Variant) -> list:
    app, what = kind.split(".")
    return STEPS[app](what, variant.params, variant)
