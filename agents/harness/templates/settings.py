"""Settings templates: switches, list choices, pages, languages, names, Wi‑Fi, sizes, volumes, wallpaper."""
from __future__ import annotations

from .base import (Variant, all_, eq, has, ne, not_, quoted, say, start_of, template, truthy)
from .pools import (BT_DEVICES, DEVICE_NAMES, LANGUAGES, SOUNDS, WALLPAPERS, WIFI_PASSWORDS)

TEMPLATES: list = []

# state key -> (ways to name it, its pages: the rows beside it there are what a wrong tap would hit)
SWITCHES = {
    "wifi": (("Wi-Fi", "wifi", "WiFi"), "network"), "airplane_mode": (("airplane mode", "flight mode"), "network"),
    "hotspot": (("the Wi-Fi hotspot", "the mobile hotspot"), "network"),
    "data_saver": (("Data Saver", "data saver mode"), "network"),
    "bluetooth": (("Bluetooth",), "connected"), "nfc": (("NFC",), "connected"),
    "location": (("location", "location services", "location access"), "location"),
    "battery_percentage": (("the battery percentage", "battery percentage"), "battery"),
    "battery_saver": (("Battery Saver", "battery saver mode"), "battery"),
    "dark_theme": (("dark theme", "dark mode"), "display style"),
    "adaptive_brightness": (("adaptive brightness", "automatic brightness"), "display"),
    "auto_rotate": (("auto-rotate", "screen auto-rotation"), "display"),
    "smooth_display": (("Smooth Display",), "display"),
    "screen_attention": (("screen attention",), "display"),
    "bold_text": (("bold text",), "text"), "high_contrast_text": (("high contrast text",), "text"),
    "themed_icons": (("themed icons",), "style"),
}
ON = ["Turn on {name}", "Enable {name}", "Switch {name} on", "Activate {name}"]
OFF = ["Turn off {name}", "Disable {name}", "Switch {name} off", "Deactivate {name}"]
SOUND_KINDS = {"ringtone": ("ringtone", "phone ringtone"),
               "notification_sound": ("notification sound", "default notification sound"),
               "alarm_sound": ("alarm sound", "default alarm sound")}
TIMEOUTS = ["15 seconds", "30 seconds", "1 minute", "2 minutes", "5 minutes", "10 minutes", "30 minutes"]
FONT_LABELS = ["85%", "100%", "115%", "130%", "150%", "180%", "200%"]
DISPLAY_LABELS = ["Small", "Default", "Large", "Larger"]
VOLUMES = {"media": ("media volume", 0, 25), "call": ("call volume", 1, 7),
           "ring": ("ring volume", 0, 7), "alarm": ("alarm volume", 1, 7)}
# page -> ways to ask for it (what visiting settings:<page> answers)
PAGES = {"battery_usage": ["Show me the battery usage", "Check which apps used the most battery"],
         "storage": ["Show me how much storage is used", "Open the storage settings"],
         "about": ["Open the About phone page", "Show me my phone's IMEI and model"],
         "location": ["Show which apps recently accessed my location", "Open the location settings"],
         "notifications": ["Open the notification settings", "Show me the notification settings"],
         "default_apps": ["Show me my default apps", "Check which apps are set as defaults"],
         "sound": ["Open the sound and vibration settings", "Show me the volume settings"],
         "languages": ["Open the language settings", "Show me the language and speech settings"],
         "accessibility": ["Open the accessibility settings", "Show me the accessibility options"],
         "wellbeing": ["Open Digital Wellbeing", "Show me my screen time settings"]}
SECURE = ("Home-5G", "NETGEAR42", "DIRECT-7B-HP OfficeJet")
OPEN = ("Starbucks WiFi", "xfinitywifi")


def _unchanged(start: dict, keys) -> list[dict]:
    return [eq(f"settings.{k}", start["settings"][k]) for k in keys]


@template(TEMPLATES, "settings.switch")
def switch(rng, fresh):
    """Turn one Settings switch on or off (it starts the other way); its page's other switches stay."""
    key = rng.choice(sorted(SWITCHES))
    names, page = SWITCHES[key]
    want = rng.random() < 0.5
    setup = {f"settings.{key}": not want}
    start = start_of(fresh, setup)
    beside = sorted(k for k, (_, p) in SWITCHES.items() if set(p.split()) & set(page.split()) and k != key)
    beside = beside or [rng.choice(sorted(k for k in SWITCHES if k != key))]  # alone on its page
    name = rng.choice(names)
    terse = [f"{name} on"] if want else [f"{name} off", f"I don't need {name} right now, turn it off."]
    near = [{f"settings.{k}": not start["settings"][k]} for k in beside]
    near += [{f"settings.{key}": want, **n} for n in near]
    return Variant(say(rng, "settings", ON if want else OFF, terse, name=name), setup,
                   all_(eq(f"settings.{key}", want), *_unchanged(start, beside)),
                   {f"settings.{key}": want}, tuple(near), {"key": key, "on": want})


@template(TEMPLATES, "settings.screen_timeout")
def screen_timeout(rng, fresh):
    """Choose the screen timeout from its list page (it starts at another value)."""
    was, want = rng.sample(TIMEOUTS, 2)
    forms = ["Set the screen timeout to {v}", "Change the screen timeout to {v}",
             "Make the screen turn off after {v} of inactivity", "Let the screen sleep after {v}"]
    other = rng.choice([t for t in TIMEOUTS if t not in (was, want)])
    return Variant(say(rng, "settings", forms, ["Screen timeout: {v}"], v=want), {"settings.screen_timeout": was},
                   eq("settings.screen_timeout", want), {"settings.screen_timeout": want},
                   ({"settings.screen_timeout": other},), {"value": want})


@template(TEMPLATES, "settings.default_browser")
def default_browser(rng, fresh):
    """Choose the default browser app (the other one is the default at the start)."""
    want, was = rng.sample(["Chrome", "Firefox"], 2)
    forms = ["Make {b} my default browser", "Change the default web browser to {b}",
             "Set {b} as the default browser app", "Use {b} as my default browser"]
    return Variant(say(rng, "settings", forms, ["Default browser: {b}"], b=rng.choice([want, want.lower()])),
                   {"settings.default_browser": was}, eq("settings.default_browser", want),
                   {"settings.default_browser": want}, (), {"browser": want})


@template(TEMPLATES, "settings.sound")
def sound(rng, fresh):
    """Pick the ringtone, notification or alarm sound in the sound picker; the other two stay."""
    kind = rng.choice(sorted(SOUND_KINDS))
    category = rng.choice(sorted(SOUNDS))
    name = rng.choice([s for s in SOUNDS[category] if s != fresh["settings"][kind]["name"]])
    want = {"category": category, "name": name}
    others = sorted(k for k in SOUND_KINDS if k != kind)
    spoken = rng.choice([name, f"{name} from the {category} sounds", f"the {category} sound {name}"])
    forms = ["Change my {what} to {s}", "Set the {what} to {s}", "Use {s} as my {what}", "Make {s} the {what}"]
    what = rng.choice(SOUND_KINDS[kind])
    wrong = rng.choice([s for s in SOUNDS[category] if s != name])
    return Variant(say(rng, "settings", forms, s=spoken, what=what), {},
                   all_(eq(f"settings.{kind}", want), *_unchanged(fresh, others)),
                   {f"settings.{kind}": want},
                   ({f"settings.{others[0]}": want}, {f"settings.{kind}": {"category": category, "name": wrong}},
                    {f"settings.{kind}": want, f"settings.{others[1]}": want}),
                   {"kind": kind, "category": category, "name": name})


@template(TEMPLATES, "settings.open_page")
def open_page(rng, fresh):
    """Open (look at) one Settings page: the check is that it was shown."""
    page = rng.choice(sorted(PAGES))
    other = rng.choice([p for p in sorted(PAGES) if p != page])
    shown = list(fresh.get("visited", []))
    return Variant(say(rng, "settings", PAGES[page]), {}, {"visited": f"settings:{page}"},
                   {"visited": shown + ["settings:home", f"settings:{page}"]},
                   ({"visited": shown + ["settings:home", f"settings:{other}"]},), {"page": page})


def _language(entry) -> str:
    _, listed, region = entry
    return f"{listed} ({region})" if region else listed


@template(TEMPLATES, "settings.language_add")
def language_add(rng, fresh):
    """Add a system language (a region page for some); English (United States) stays."""
    entry, other = rng.sample(LANGUAGES, 2)
    value, base = _language(entry), fresh["settings"]["languages"]
    setup = {"settings.languages": base + [_language(other)]} if rng.random() < 0.3 else {}
    start = start_of(fresh, setup)
    said = rng.choice([entry[0], value])
    forms = ["Add {lang} to my languages", "Add {lang} as a system language", "Add the {lang} language to my phone",
             "Put {lang} in my list of system languages"]
    kin = [e for e in LANGUAGES if e[1] == entry[1] and e != entry]
    wrong = _language(rng.choice(kin)) if kin else _language(other)
    langs = start["settings"]["languages"]
    return Variant(say(rng, "settings", forms, lang=said), setup,
                   all_(has("settings.languages", value), has("settings.languages", "English (United States)")),
                   {"settings.languages": langs + [value]},
                   ({"settings.languages": langs + [wrong]}, {"settings.languages": [value]}),
                   {"listed": entry[1], "region": entry[2], "value": value})


@template(TEMPLATES, "settings.language_remove")
def language_remove(rng, fresh):
    """Remove one of several system languages; the others stay."""
    picks = [_language(e) for e in rng.sample(LANGUAGES, 2)]
    target, keep = picks
    langs = ["English (United States)"] + rng.sample(picks, 2)
    forms = ["Remove {lang} from my languages", "Delete {lang} from the system languages",
             "Take {lang} off my list of languages"]
    said = next(e[0] for e in LANGUAGES if _language(e) == target) if rng.random() < 0.5 else target
    return Variant(say(rng, "settings", forms, ["I no longer need {lang} as a language, remove it."], lang=said),
                   {"settings.languages": langs},
                   all_(not_(has("settings.languages", target)), has("settings.languages", keep),
                        has("settings.languages", "English (United States)")),
                   {"settings.languages": [x for x in langs if x != target]},
                   ({"settings.languages": [x for x in langs if x != keep]},), {"value": target})


@template(TEMPLATES, "settings.rename_device")
def rename_device(rng, fresh):
    """Rename the phone (About phone > Device name), from its current name to a drawn one."""
    was, want = rng.sample(DEVICE_NAMES, 2)
    setup = {"settings.device_name": was} if rng.random() < 0.4 else {}
    forms = ["Rename my phone to {n}", "Change the device name to {n}", "Call this phone {n}",
             "Set the phone's device name to {n}"]
    return Variant(say(rng, "settings", forms, n=quoted(rng, want)), setup, eq("settings.device_name", want),
                   {"settings.device_name": want},
                   ({"settings.device_name": want[:-1]}, {"settings.device_name": want.lower()}),
                   {"name": want, "was": setup.get("settings.device_name", fresh["settings"]["device_name"])})


@template(TEMPLATES, "settings.wifi_connect")
def wifi_connect(rng, fresh):
    """Join a Wi‑Fi network, with its password when it is secured (Wi‑Fi may start off)."""
    secure = rng.random() < 0.65
    net = rng.choice(SECURE if secure else OPEN)
    setup = {"settings.wifi": False} if rng.random() < 0.35 else {}
    start = start_of(fresh, setup)
    pw = rng.choice(WIFI_PASSWORDS)
    s = start["settings"]
    if secure:
        forms = ["Connect to the Wi-Fi network {net} with the password {pw}", "Join {net}, the password is {pw}",
                 "Get on the {net} Wi-Fi using the password {pw}"]
        said = say(rng, "settings", forms, net=quoted(rng, net), pw=quoted(rng, pw))
    else:
        said = say(rng, "settings", ["Connect to {net}", "Join the {net} Wi-Fi network", "Switch Wi-Fi to {net}"],
                   net=quoted(rng, net))
    check = [eq("settings.wifi", True), eq("settings.wifi_network", net)]
    effect = {"settings.wifi": True, "settings.wifi_network": net, "settings.saved_networks": s["saved_networks"] + [net]}
    other = rng.choice([n for n in SECURE + OPEN if n != net])
    near = [{**effect, "settings.wifi_network": other}]
    if secure:
        check.append(eq(f"settings.wifi_passwords.{net}", pw))
        effect[f"settings.wifi_passwords.{net}"] = pw
        near.append({**effect, f"settings.wifi_passwords.{net}": pw[:-1]})
    return Variant(said, setup, all_(*check), effect, tuple(near), {"network": net, "password": pw if secure else None})


@template(TEMPLATES, "settings.font_size")
def font_size(rng, fresh):
    """Set the font size to a step of its slider (a percentage, or the smallest/largest)."""
    was, want = rng.sample(range(len(FONT_LABELS)), 2)
    setup = {"settings.font_size": {"step": was, "label": FONT_LABELS[was]}}
    forms = ["Set the font size to {p}", "Change the font size to {p}", "Make the text size {p}"]
    if want in (0, len(FONT_LABELS) - 1) and rng.random() < 0.5:
        big = want > 0
        forms = ["Make the font as {x} as it goes".format(x="large" if big else "small"),
                 "Set the font size to the {x}".format(x="largest" if big else "smallest")]
    wrong = want + 1 if want + 1 < len(FONT_LABELS) else want - 1
    return Variant(say(rng, "settings", forms, p=FONT_LABELS[want]), setup, eq("settings.font_size.step", want),
                   {"settings.font_size": {"step": want, "label": FONT_LABELS[want]}},
                   ({"settings.font_size": {"step": wrong, "label": FONT_LABELS[wrong]}},),
                   {"step": want, "was": was})


@template(TEMPLATES, "settings.display_size")
def display_size(rng, fresh):
    """Set the display size (Small / Default / Large / Larger); the font size stays."""
    was, want = rng.sample(range(len(DISPLAY_LABELS)), 2)
    setup = {"settings.display_size": {"step": was, "label": DISPLAY_LABELS[was]}}
    forms = ["Set the display size to {l}", "Change the display size to {l}", "Make the display size {l}"]
    font = fresh["settings"]["font_size"]
    moved = {"step": min(font["step"] + 1, 6), "label": FONT_LABELS[min(font["step"] + 1, 6)]}
    return Variant(say(rng, "settings", forms, ["Display size: {l}"], l=DISPLAY_LABELS[want]), setup,
                   all_(eq("settings.display_size.step", want), eq("settings.font_size.step", font["step"])),
                   {"settings.display_size": {"step": want, "label": DISPLAY_LABELS[want]}},
                   ({"settings.font_size": moved, "settings.display_size": {"step": want, "label": DISPLAY_LABELS[want]}},),
                   {"step": want, "was": was})


@template(TEMPLATES, "settings.volume")
def volume(rng, fresh):
    """Turn one volume slider all the way up or down; the other volumes stay."""
    stream = rng.choice(sorted(VOLUMES))
    name, low, high = VOLUMES[stream]
    up = rng.random() < 0.5
    setup = {f"settings.volume.{stream}": rng.randint(low + 1, high - 1)}
    start = start_of(fresh, setup)
    want = high if up else low
    forms = (["Turn the {s} all the way up", "Set the {s} to maximum", "Max out the {s}"] if up else
             ["Turn the {s} all the way down", "Set the {s} to the minimum", "Put the {s} at its lowest"])
    others = sorted(k for k in VOLUMES if k != stream)
    vol = start["settings"]["volume"]
    other = others[0]
    return Variant(say(rng, "settings", forms, s=name), setup,
                   all_(eq(f"settings.volume.{stream}", want), *(eq(f"settings.volume.{k}", vol[k]) for k in others)),
                   {f"settings.volume.{stream}": want},
                   ({f"settings.volume.{stream}": want - 1 if up else want + 1},
                    {f"settings.volume.{stream}": want, f"settings.volume.{other}": VOLUMES[other][2 if up else 1]}),
                   {"stream": stream, "up": up})


@template(TEMPLATES, "settings.bluetooth_pair")
def bluetooth_pair(rng, fresh):
    """Pair a nearby Bluetooth device (Bluetooth may start off); the saved one stays."""
    device = rng.choice(BT_DEVICES)
    setup = {"settings.bluetooth": False} if rng.random() < 0.3 else {}
    saved = fresh["settings"]["bluetooth_devices"]
    forms = ["Pair my phone with {d}", "Pair {d} over Bluetooth", "Connect my {d} with Bluetooth",
             "Set up my new {d} over Bluetooth"]
    other = rng.choice([d for d in BT_DEVICES if d != device])
    return Variant(say(rng, "settings", forms, d=device), setup,
                   all_(has("settings.bluetooth_devices", device), *(has("settings.bluetooth_devices", d) for d in saved)),
                   {"settings.bluetooth": True, "settings.bluetooth_devices": saved + [device]},
                   ({"settings.bluetooth_devices": saved + [other]}, {"settings.bluetooth_devices": [device]}),
                   {"device": device})


@template(TEMPLATES, "settings.wallpaper")
def wallpaper(rng, fresh):
    """Set a wallpaper from a category on the home screen, the lock screen or both."""
    category = rng.choice(sorted(WALLPAPERS))
    title = rng.choice(WALLPAPERS[category])
    where = rng.choice(["home", "lock", "both"])
    value = f"{category}/{title}"
    screens = {"home": "home screen", "lock": "lock screen", "both": "home and lock screen"}[where]
    forms = ["Set {t} from {c} as my {w} wallpaper", "Change the {w} wallpaper to {t} from the {c} category",
             "Use the {c} wallpaper {t} for the {w}"]
    now = fresh["settings"]["wallpaper"]
    want = {"home": value if where != "lock" else now["home"], "lock": value if where != "home" else now["lock"]}
    near = ({"settings.wallpaper": {"home": value, "lock": value}},) if where != "both" else \
        ({"settings.wallpaper": {"home": value, "lock": now["lock"]}},)
    return Variant(say(rng, "settings", forms, t=quoted(rng, title), c=category, w=screens), {},
                   all_(eq("settings.wallpaper.home", want["home"]), eq("settings.wallpaper.lock", want["lock"])),
                   {"settings.wallpaper": want}, near, {"category": category, "title": title, "where": where})


@template(TEMPLATES, "settings.update_check")
def update_check(rng, fresh):
    """Check for a system update (the button, not only the page)."""
    stamp = rng.choice([None, "Mon, Jun 10, 8:02 AM", "Sun, Jun 9, 7:15 PM"])
    setup = {"settings.last_update_check": stamp} if stamp else {}
    forms = ["Check for system updates", "See if there's a software update", "Look for an Android update",
             "Check whether my phone's software is up to date"]
    shown = list(fresh.get("visited", [])) + ["settings:home", "settings:system", "settings:system_update"]
    check = all_({"visited": "settings:system_update"}, truthy("settings.last_update_check"),
                 ne("settings.last_update_check", stamp))
    return Variant(say(rng, "settings", forms), setup, check,
                   {"visited": shown, "settings.last_update_check": "Wed, Jun 12, 9:41 AM"},
                   ({"visited": shown},), {"stamp": stamp})
