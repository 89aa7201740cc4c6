"""The values templates draw from. Deliberately none of the names, numbers, texts or values the
shipped tasks (assets/phone/tasks) or the phone's own starting data use, so a drawn task measures
what the agent was never tuned on; the tests hold every pool to the phone's catalogue."""
from __future__ import annotations

import random

FIRST = ("Maya", "Noah", "Leila", "Omar", "Ines", "Victor", "Harper", "Rafael", "Zoe", "Kenji", "Amara",
         "Felix", "Nadia", "Elliot", "Yara", "Marcus", "Freya", "Tariq", "Clara", "Diego", "Hugo", "Ivy",
         "Jonah", "Kira", "Lena", "Mateo", "Nora", "Oscar", "Rosa", "Soren", "Talia", "Wes", "Yusuf", "Zara")
LAST = ("Okafor", "Lindqvist", "Brennan", "Castillo", "Haddad", "Novak", "Fischer", "Moreau", "Tanaka",
        "Kowalski", "Adeyemi", "Sorensen", "Vargas", "Whitfield", "Delgado", "Ibrahim", "Larsen", "Mbeki",
        "Quinn", "Romano", "Sato", "Petrov", "Gallagher", "Nakamura", "Ortega", "Bauer", "Duval", "Eklund")
COMPANIES = ("Northwind Labs", "Bluebird Bakery", "Summit Health", "Lumen Studio", "Pinecrest Realty",
             "Orbital Systems", "Riverside Clinic", "Copperleaf Books", "Granite Legal", "Tidewater Logistics",
             "Foxglove Florists", "Meridian Bank")
MAIL_DOMAINS = ("outlook.com", "proton.me", "fastmail.com", "icloud.com", "hey.com")
# area codes no starting contact or conversation uses (those are 650, 415, 408, 510, 800, 202)
AREAS = ("212", "303", "312", "617", "206", "512", "720", "404", "305", "971", "267", "619", "702", "919")

MESSAGES = ("Can you grab milk on the way home?", "The package arrived, thanks!", "Start without me, I'm stuck in traffic",
            "Are you free for a call at 4?", "The recycling goes out tonight", "I left the keys under the mat",
            "Happy anniversary to you both!", "Dinner is at 7:30 at the Thai place", "Did you feed the cat?",
            "Meeting moved to Thursday", "Can I borrow your ladder this weekend?", "Flight lands at 10:15",
            "Thanks for the ride yesterday", "Bring the blue folder please", "Good luck on the exam tomorrow",
            "Let's reschedule our coffee", "The plumber comes at noon", "Pick you up at 8?")
OLD_MESSAGES = ("See you soon", "Sounds good", "Call me when you can", "Got it, thanks",
                "How was the trip?", "Any news on the apartment?", "I'll check and get back to you",
                "Did you see the game?", "Are we still on for Saturday?", "Can you send me the address?")

ALARM_LABELS = ("Pilates", "Take vitamins", "School run", "Standup call", "Water the plants", "Bin day",
                "Laundry", "Feed the cat", "Piano practice", "Leave for the airport", "Lunch break",
                "Dentist", "Stretch", "Call Grandma", "Pay rent")
TIMER_LABELS = ("Pasta", "Tea", "Laundry", "Oven", "Nap", "Eggs", "Focus", "Bread")
CITIES = ("Nairobi", "Reykjavik", "Lima", "Seoul", "Cairo", "Toronto", "Sydney", "Mumbai", "Berlin",
          "Honolulu", "Buenos Aires", "Helsinki", "Dubai", "Mexico City", "Singapore", "Lisbon", "Chicago",
          "Auckland", "Istanbul", "Jakarta", "Madrid", "Denver", "Cape Town", "Hanoi", "Oslo", "Vancouver")

# (how a user names it, how the locale picker lists it, the region as listed, or None)
LANGUAGES = (("Italian", "Italiano", None), ("Dutch", "Nederlands", None), ("Polish", "Polski", None),
             ("Swedish", "Svenska", None), ("Danish", "Dansk", None), ("Finnish", "Suomi", None),
             ("Turkish", "Türkçe", None), ("Welsh", "Cymraeg", None), ("Catalan", "Català", None),
             ("Hungarian", "Magyar", None), ("Filipino", "Filipino", None), ("Swahili", "Kiswahili", None),
             ("Basque", "Euskara", None), ("Czech", "Čeština", None), ("Romanian", "Română", None),
             ("Icelandic", "Íslenska", None), ("Greek", "Ελληνικά", None), ("Japanese", "日本語", None),
             ("Korean", "한국어", None), ("Ukrainian", "Українська", None),
             ("German (Germany)", "Deutsch", "Deutschland"), ("German (Austria)", "Deutsch", "Österreich"),
             ("German (Switzerland)", "Deutsch", "Schweiz"), ("Spanish (Spain)", "Español", "España"),
             ("Spanish (Mexico)", "Español", "México"), ("Spanish (Argentina)", "Español", "Argentina"),
             ("Portuguese (Brazil)", "Português", "Brasil"), ("Portuguese (Portugal)", "Português", "Portugal"),
             ("French (France)", "Français", "France"), ("French (Belgium)", "Français", "Belgique"),
             ("English (Australia)", "English", "Australia"), ("English (India)", "English", "India"),
             ("English (Ireland)", "English", "Ireland"), ("English (New Zealand)", "English", "New Zealand"))

DEVICE_NAMES = ("Maya's Pixel", "Kitchen phone", "Work Pixel", "Travel phone", "Studio 7", "Backup phone",
                "Noah's phone", "Pixel Seven", "Field phone", "Garage Pixel")
WIFI_PASSWORDS = ("tangerine-88", "BlueHarbor2024", "quiet.river.7", "lanternfish99", "copper_moss12",
                  "Orchard-Lane-5", "velvet2025", "northstar.42", "pebble-beach-3", "Granola4Ever")
SOUNDS = {"Pixel Sounds": ("Crackle", "Curiosity", "Dance Party", "Early Bird", "Flutterby", "Hey Hey",
                           "Hopscotch", "Lost and Found", "Nudge", "Paper Planes", "Spaceship", "Zen Too"),
          "Classic": ("Andromeda", "Aquila", "Atria", "Bootes", "Centaurus", "Cygnus", "Draco", "Hydra",
                      "Lyra", "Orion", "Pegasus", "Perseus", "Pyxis", "Rigel", "Solarium", "Testudo")}
WALLPAPERS = {"Landscapes": ("Glacier bay", "Desert dunes", "Alpine lake", "Rolling hills", "Aurora", "Misty forest"),
              "Life": ("Market day", "Campfire", "Kite festival", "Tea time", "Street musician"),
              "Art": ("Abstract bloom", "Brush strokes", "Ink wash", "Paper cut", "Pop dots"),
              "Cityscapes": ("Paris rooftops", "Lisbon tram", "Hong Kong harbor", "Seattle rain"),
              "Textures": ("Slate", "Linen", "Moss", "Marble"),
              "Solid colors": ("Charcoal", "Sage", "Rose", "Navy")}
BT_DEVICES = ("Galaxy Buds2", "Bose QC35 II", "Fitbit Charge 6")
CONTACT_LABELS = ("Neighbors", "Climbing", "Volunteers", "Parents", "Choir", "Running club", "Clients",
                  "Band", "Cousins", "Study group", "Carpool", "Landlords")


def person(rng: random.Random, taken: set[str]) -> tuple[str, str]:
    """A first and last name, the first name unused in ``taken`` (first names and full names)."""
    firsts = [f for f in FIRST if f not in taken]
    first = rng.choice(firsts)
    last = rng.choice([n for n in LAST if f"{first} {n}" not in taken])
    return first, last


def number(rng: random.Random, taken: set[str]) -> str:
    """A fictional 10-digit number (555-01xx) not in ``taken`` (digits only)."""
    while True:
        digits = f"{rng.choice(AREAS)}5550{rng.randint(100, 199)}"
        if digits not in taken:
            return digits


def email(rng: random.Random, first: str, last: str) -> str:
    user = rng.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}{last[0]}", f"{first}_{last}"))
    return f"{user}@{rng.choice(MAIL_DOMAINS)}".lower()
