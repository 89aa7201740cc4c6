"""A task as people phrase it, reduced to what the planner reads: politeness dropped ("Could you
…for me?"), the app it names taken out and returned apart ("Using the Settings app, …", "…in
Google Clock"), and a few phrasal verbs said the way apps label their buttons ("get rid of" is
"delete", "take X off" is "remove X from"). Quoted text is never touched.

    normalize("Could you take Wednesday off the 07:19 alarm in Google Clock?", ["Clock"])
    -> ("remove Wednesday from the 07:19 alarm", "Clock")
"""
from __future__ import annotations

import re

POLITE = re.compile(r"^(please|kindly|could you|can you|would you|will you|would you mind|"
                    r"i need you to|i want you to|i'?d like you to|i would like you to|help me(?: to)?|"
                    r"go ahead and|let'?s|now|just|also)\b[\s,]*", re.I)
TRAILING = re.compile(r"[\s,]*(?:\b(?:for me|please|thanks|thank you|right away|now)\b)?\s*[?.!]*\s*$", re.I)
# where it happens, said of the phone itself ("… on my Android device"): no word of the task
DEVICE = re.compile(r"\s+(?:on|of|in|from) (?:my|the) (?:android )?(?:device|phone)(?=\s*(?:and\b|[,.?!]|$))", re.I)
# the whole rest of a task is someone's name ("Nora Eklund", "Nora Eklund in my contacts")
PERSON_ONLY = (r"((?!(?:the|a|an|my|this|that|all|every|it|them|him|her|messages?|conversations?|chats?|texts?|"
               r"threads?)\b)[^\s'’\x00]+(?: [^\s'’\x00]+){0,3}?)(?=(?: in (?:my |the )?contacts)?$)")
PHRASES = [
    (r"\bremove (.+?) from (?:my |the )?(?:blocked (?:numbers|list|contacts)|block ?list)\b", r"unblock \1"),
    (r"\bget rid of\b", "delete"),
    # what the user wants to happen, said as the button that does it
    (r"\b(?:let|allow) (.+?) (?:to )?(?:text|message|call|contact|reach) me(?: again)?(?: by unblocking "
     r"(?:it|them|him|her|the number))?$", r"unblock \1"),
    (r"\bstop (.+?) from (?:texting|messaging|calling|contacting) me(?: by blocking "
     r"(?:it|them|him|her|the number))?$", r"block \1"),
    (r"\bmake (.+?) (?:a |one of my )?favou?rites?(?: contacts?)?$", r"add \1 to favorites"),
    (r"^i (?:no longer|don'?t|do not) (?:need|want|use) (.+?)(?: anymore| any more)? as an? ([\w ]+?)"
     r"(?:[,;] (?:so |please )?(?:remove|delete|get rid of) (?:it|them))?$", r"remove \1 from my \2s"),
    (r"^i (?:no longer|don'?t|do not) (?:need|want|use) (.+?)(?: anymore| any more)?"
     r"(?:[,;] (?:so |please )?(?:remove|delete|get rid of) (?:it|them))?$", r"remove \1"),
    (r"\bstop (pinn|mut|archiv|starr)ing\b",                      # "stop pinning my chat with …"
     lambda m: "un" + {"pinn": "pin", "mut": "mute", "archiv": "archive", "starr": "star"}[m.group(1).lower()]),
    (r"\btake (.+?) off\b", r"remove \1 from"),
    (r"\btake (.+?) out of\b", r"remove \1 from"),
    (r"\b(?:remove|take) the (star|pin|flag)(?: off| from)?\b", r"un\1"),   # not a delete
    (r"\b(?:rename|name) (?:my|the|this) (?:phone|device)\b", "change the device name"),
    (r"\bcall (?:my|the|this) (?:phone|device)(?: to)? ", "change the device name to "),   # not a phone call
    # "set up my new Galaxy Buds2 over Bluetooth": a device to pair ("new" makes nothing)
    (r"\b(?:set up|connect|pair) (?:my |the |a )?(?:new )?(.+?) (?:over|via|using|with|on) bluetooth\b", r"pair with \1"),
    (r"\bcheck (?:whether|if) (?:my |the )?(?:phone['’]s |device['’]s )?(?:software|system|android|phone) is up to date\b",
     "check for a system update"),
    (r"^(?:label|tag) (.+?) as (?:an? |my )?(.+?)$", r"add \1 to the \2 label"),
    (r"^(?:add|apply|give) (?:the )?(?:label|tag) (.+?) to (.+)$", r"add \2 to the \1 label"),
    (r"^(?:apply|give) (?:the )?(.+?) (?:label|tag) to (.+)$", r"add \2 to the \1 label"),
    (r"^give (.+?) the (.+?) (?:label|tag)$", r"add \1 to the \2 label"),
    (r"^(?!(?:text|message|send|call|email|tell|ask|remind|write|sms)\b)([A-Za-z][\w &'-]{2,40}): ([^\x00].*)$",
     # "Display size: Small"; only its first word is lower-cased ("New email for Kira Quinn: …"
     # keeps the name a name)
     lambda m: f"set the {m.group(1)[:1].lower()}{m.group(1)[1:]} to {m.group(2)}"),
    (r"\bremove (.+?) from (?:my |the )?(?:contacts|contact list|address book)\b", r"delete the contact \1"),
    (r"\bchange the name of\b", "rename"),
    (r"^call (?:the |my )?(.+?) (label|group|alarm|playlist|folder) (.+?)(?: instead)?$", r"rename the \1 \2 to \3"),
    (r"\bput (.+?) (?:in|into) ((?:my |the )?[\w ]*?\b(?:group|label))\b", r"add \1 to \2"),
    (r"\bmark (.+?) as (?:starred|a favou?rite|favou?rite|important)\b", r"star \1"),
    # a person starred is a favorite contact (a message is starred by its words, not a name)
    (r"^star " + PERSON_ONLY, r"add \1 to favorites"),
    (r"^unstar " + PERSON_ONLY, r"remove \1 from favorites"),
    # sent at a later time is scheduled
    (r"^(?:write|text|message|send) (.+?),? (?:but|and) (?:send|deliver) it (?=on |at |tomorrow\b|tonight\b)",
     r"schedule a text to \1 to be sent "),
    (r"\bswitch (on|off)\b", r"turn \1"),
    (r"\bget on(?:to)?\b", "connect to"),
    (r"\bhook up\b", "pair"),
    (r"\bwrite (?=[A-Z])", "send "),
    # "Text Priya …", "message the number …": the verb apps label their button with
    (r"^(?:[Tt]ext|[Mm]essage|SMS) (?=[A-Z])", "send a text to "),
    (r"^(?:text|message|sms) (?=\+?\d|\(\d|the number\b)", "send a text to "),
    (r"\bshoot (?:a )?(?:text|message) to\b", "text"),
    (r"\bget (?:a )?(?:text|message) to\b", "text"),
]


def normalize(task: str, apps: list[str]) -> tuple[str, str | None]:
    """(the task without politeness and app invocation, the app it named or None)."""
    text = " ".join(task.split())
    quoted: list[str] = []

    def hide(m: re.Match) -> str:           # quoted text stays exactly as written
        quoted.append(m.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    from .slots import QUOTED

    text = QUOTED.sub(hide, text)
    named = None
    for app in sorted(apps, key=len, reverse=True):
        name = re.escape(app)
        invoke = re.compile(rf"(?:^|(?<=[\s,]))(?:(?:open|launch|go to|use|using|in|on|with|from|inside)\s+)"
                            rf"(?:the\s+)?(?:google\s+)?{name}(?:\s+app)?(?:\s*,\s*|\s+and\s+(?:then\s+)?|\s+to\s+|(?=\s*[.?!]*$))"
                            rf"|\bgoogle\s+{name}(?:'s)?\b(?:\s+app)?", re.I)
        m = invoke.search(text)
        if m:
            named = app
            text = (text[:m.start()] + " " + text[m.end():]).strip()
            break
    for _ in range(3):
        text = POLITE.sub("", text).strip()
    text = DEVICE.sub("", text)
    text = TRAILING.sub("", text).strip(" ,")
    for pattern, repl in PHRASES:
        text = re.sub(pattern, repl, text, flags=re.I if not pattern.endswith("(?=[A-Z])") else 0)
    text = re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], text)
    text = " ".join(text.split())
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return text, named
