"""Clock templates: alarms (new, on/off, delete, time, label, days, vibrate), the timer, the stopwatch,
world-clock cities. Drawn alarms join the two the phone starts with, at times no other alarm has."""
from __future__ import annotations

import copy

from .base import (Variant, all_, eq, fields, has, not_, quoted, say, some, start_of, template)
from .pools import ALARM_LABELS, CITIES, TIMER_LABELS

TEMPLATES: list = []
WEEK = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
DAY_NAMES = {"Sun": "Sunday", "Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
             "Fri": "Friday", "Sat": "Saturday"}
DAY_SETS = {"every weekday": WEEK[1:6], "on weekends": ["Sun", "Sat"], "every day": WEEK,
            "on Mondays, Wednesdays and Fridays": ["Mon", "Wed", "Fri"], "on Tuesdays and Thursdays": ["Tue", "Thu"],
            "on Saturdays only": ["Sat"], "on Sundays and Mondays": ["Sun", "Mon"]}


def time_text(rng, hour: int, minute: int, ampm: str) -> str:
    """A time as people write it: 6:47 AM, 6:47am, 6:47 a.m., 18:47, 7 PM."""
    h24 = hour % 12 + (12 if ampm == "PM" else 0)
    forms = [f"{hour}:{minute:02d} {ampm}", f"{hour}:{minute:02d}{ampm.lower()}",
             f"{hour}:{minute:02d} {ampm[0].lower()}.m.", f"{h24:02d}:{minute:02d}"]
    if minute == 0:
        forms += [f"{hour} {ampm}", f"{hour}{ampm.lower()}"]
    return rng.choice(forms)


def _when(alarm: dict) -> tuple:
    return alarm["hour"], alarm["minute"], alarm["ampm"]


def draw_time(rng, taken: set) -> tuple[int, int, str]:
    """A time no alarm has; half the minutes are odd ones a dial cannot show."""
    while True:
        minute = rng.randrange(0, 60, 5) if rng.random() < 0.5 else rng.randrange(60)
        when = (rng.randint(1, 12), minute, rng.choice(["AM", "PM"]))
        if when not in taken:
            return when


def alarm(when: tuple, label: str = "", days=(), on: bool = True, vibrate: bool = True) -> dict:
    hour, minute, ampm = when
    return {"hour": hour, "minute": minute, "ampm": ampm, "label": label, "days": list(days), "on": on,
            "vibrate": vibrate, "sound": "Default (Cesium)"}


def ident(a: dict) -> dict:
    """What picks one alarm out: its time and label."""
    return {k: a[k] for k in ("hour", "minute", "ampm", "label")}


def scene(rng, fresh, **target):
    """The phone's alarms plus a drawn target (and, often, a near-twin distractor), inserted at drawn
    places: (alarms, target, distractor or None, reference text, by_label)."""
    alarms = copy.deepcopy(fresh["clock"]["alarms"])
    taken = {_when(a) for a in alarms}
    when = draw_time(rng, taken)
    by_label = rng.random() < 0.4
    labels = rng.sample(ALARM_LABELS, 2)
    goal = alarm(when, labels[0] if by_label or rng.random() < 0.3 else "", **target)
    other = None
    if rng.random() < 0.7:
        # a twin: the same time the other half of the day, or the same hour at another minute
        twin = (when[0], when[1], "PM" if when[2] == "AM" else "AM")
        if twin in taken or rng.random() < 0.5:
            minutes = [m for m in range(60) if m != when[1] and (when[0], m, when[2]) not in taken]
            twin = (when[0], rng.choice(minutes), when[2])
        other = alarm(twin, labels[1] if rng.random() < 0.5 else "", days=rng.choice([[], WEEK[1:6]]),
                      on=rng.random() < 0.5, vibrate=rng.random() < 0.5)
    for a in [goal] + ([other] if other else []):
        alarms.insert(rng.randint(0, len(alarms)), a)
    if by_label:
        ref = rng.choice([f"the {quoted(rng, goal['label'])} alarm", f"the alarm labeled {quoted(rng, goal['label'])}"])
    else:
        ref = f"the {time_text(rng, *when)} alarm"
    return alarms, goal, other, ref, by_label


def _keeps(other) -> list[dict]:
    return [some("clock.alarms", fields(other))] if other else []


def _swap(alarms: list, old: dict, new: dict | None) -> list:
    out = [a for a in alarms]
    i = out.index(old)
    if new is None:
        del out[i]
    else:
        out[i] = new
    return out


@template(TEMPLATES, "clock.alarm_new")
def alarm_new(rng, fresh):
    """A new alarm at a drawn time (odd minutes too), with or without a label."""
    alarms = copy.deepcopy(fresh["clock"]["alarms"])
    when = draw_time(rng, {_when(a) for a in alarms})
    label = rng.choice(ALARM_LABELS) if rng.random() < 0.5 else ""
    t = time_text(rng, *when)
    if label:
        forms = ["Set an alarm for {t} labeled {l}", "Create a {t} alarm called {l}",
                 "Add an alarm at {t} with the label {l}", "Set an alarm named {l} for {t}"]
    else:
        forms = ["Set an alarm for {t}", "Create an alarm at {t}", "Wake me up at {t}", "Add a new alarm for {t}"]
    new = alarm(when, label)
    want = [fields({k: new[k] for k in ("hour", "minute", "ampm", "on")})] + ([eq("item.label", label)] if label else [])
    wrong_half = alarm((when[0], when[1], "PM" if when[2] == "AM" else "AM"), label)
    wrong_min = alarm((when[0], (when[1] + 5) % 60, when[2]), label)
    near = [{"clock.alarms": alarms + [wrong_half]}, {"clock.alarms": alarms + [wrong_min]}]
    if label:
        near.append({"clock.alarms": alarms + [alarm(when)]})
    return Variant(say(rng, "clock", forms, ["Alarm at {t}"] if not label else [], t=t, l=quoted(rng, label)), {},
                   all_(some("clock.alarms", all_(*want)), eq("clock.alarms.length", len(alarms) + 1)),
                   {"clock.alarms": alarms + [new]}, tuple(near), {"alarm": new})


@template(TEMPLATES, "clock.alarm_switch")
def alarm_switch(rng, fresh):
    """Turn one alarm on or off, named by its time or its label; a near-twin alarm keeps its state."""
    want = rng.random() < 0.5
    alarms, goal, other, ref, _ = scene(rng, fresh, on=not want)
    forms = (["Turn on {r}", "Enable {r}", "Switch on {r}"] if want else ["Turn off {r}", "Disable {r}", "Switch off {r}"])
    done = _swap(alarms, goal, {**goal, "on": want})
    wrong = other or next(a for a in alarms if a is not goal)
    near = [{"clock.alarms": _swap(alarms, wrong, {**wrong, "on": not wrong["on"]})}]
    near += [{"clock.alarms": _swap(done, other, {**other, "on": not other["on"]})}] if other else []
    return Variant(say(rng, "clock", forms, r=ref), {"clock.alarms": alarms},
                   all_(some("clock.alarms", all_(fields(ident(goal)), eq("item.on", want))), *_keeps(other),
                        eq("clock.alarms.length", len(alarms))),
                   {"clock.alarms": done}, tuple(near), {"alarm": goal, "on": want})


@template(TEMPLATES, "clock.alarm_delete")
def alarm_delete(rng, fresh):
    """Delete one alarm, named by its time or its label; the others stay."""
    alarms, goal, other, ref, _ = scene(rng, fresh)
    forms = ["Delete {r}", "Remove {r}", "Get rid of {r}"]
    wrong = other or next(a for a in alarms if a is not goal)
    return Variant(say(rng, "clock", forms, r=ref), {"clock.alarms": alarms},
                   all_(not_(some("clock.alarms", fields(ident(goal)))), *_keeps(other),
                        eq("clock.alarms.length", len(alarms) - 1)),
                   {"clock.alarms": _swap(alarms, goal, None)}, ({"clock.alarms": _swap(alarms, wrong, None)},),
                   {"alarm": goal})


@template(TEMPLATES, "clock.alarm_time")
def alarm_time(rng, fresh):
    """Move one alarm to another time; its label and days stay, no alarm is added."""
    alarms, goal, other, ref, _ = scene(rng, fresh, days=rng.choice([[], WEEK[1:6], ["Sat"]]))
    when = draw_time(rng, {_when(a) for a in alarms})
    moved = {**goal, "hour": when[0], "minute": when[1], "ampm": when[2], "on": True}
    forms = ["Change {r} to {t}", "Move {r} to {t}", "Reschedule {r} for {t}"]
    flipped = {**moved, "ampm": "PM" if when[2] == "AM" else "AM"}
    keep = {k: moved[k] for k in ("hour", "minute", "ampm", "label")}
    return Variant(say(rng, "clock", forms, r=ref, t=time_text(rng, *when)), {"clock.alarms": alarms},
                   all_(some("clock.alarms", all_(fields(keep), eq("item.days", goal["days"]))),
                        not_(some("clock.alarms", fields(ident(goal)))), *_keeps(other),
                        eq("clock.alarms.length", len(alarms))),
                   {"clock.alarms": _swap(alarms, goal, moved)},
                   ({"clock.alarms": _swap(alarms, goal, flipped)}, {"clock.alarms": alarms + [alarm(when)]}),
                   {"alarm": goal, "to": list(when)})


@template(TEMPLATES, "clock.alarm_label")
def alarm_label(rng, fresh):
    """Give an unlabeled alarm (named by its time) a label."""
    alarms = copy.deepcopy(fresh["clock"]["alarms"])
    when = draw_time(rng, {_when(a) for a in alarms})
    goal = alarm(when, on=rng.random() < 0.5)
    alarms.insert(rng.randint(0, len(alarms)), goal)
    label = rng.choice(ALARM_LABELS)
    forms = ["Label {r} {l}", "Name {r} {l}", "Give {r} the label {l}", "Add the label {l} to {r}"]
    neighbour = rng.choice([a for a in alarms if a is not goal])
    return Variant(say(rng, "clock", forms, r=f"the {time_text(rng, *when)} alarm", l=quoted(rng, label)),
                   {"clock.alarms": alarms},
                   all_(some("clock.alarms", fields({**ident(goal), "label": label})),
                        eq("clock.alarms.length", len(alarms))),
                   {"clock.alarms": _swap(alarms, goal, {**goal, "label": label})},
                   ({"clock.alarms": _swap(alarms, neighbour, {**neighbour, "label": label})},
                    {"clock.alarms": _swap(alarms, goal, {**goal, "label": label[:-1]})}),
                   {"alarm": goal, "label": label})


@template(TEMPLATES, "clock.alarm_days")
def alarm_days(rng, fresh):
    """Set which days an alarm repeats on: a whole set, one more day, or one day less."""
    mode = rng.choice(["set", "add", "remove"])
    if mode == "set":
        said, want = rng.choice(sorted(DAY_SETS.items()))
        was = []
    else:
        was = sorted(rng.sample(WEEK, rng.randint(2, 4)), key=WEEK.index)
        day = rng.choice(was if mode == "remove" else [d for d in WEEK if d not in was])
        want = [d for d in WEEK if (d in was) != (d == day)]
    alarms, goal, other, ref, _ = scene(rng, fresh, days=was)
    if mode == "set":
        forms = ["Make {r} repeat {s}", "Set {r} to ring {s}", "Have {r} go off {s}"]
    elif mode == "add":
        forms = ["Make {r} also ring on {s}s", "Add {s} to {r}", "Have {r} repeat on {s}s too"]
        said = DAY_NAMES[day]
    else:
        forms = ["Stop {r} from ringing on {s}s", "Remove {s} from {r}", "Take {s} off {r}"]
        said = DAY_NAMES[day]
    days = all_(*(has("item.days", d) for d in want), eq("item.days.length", len(want)))
    extra = next(d for d in WEEK if d not in want) if len(want) < 7 else None
    wrong = [d for d in WEEK if d in want or d == extra] if extra else want[1:]
    return Variant(say(rng, "clock", forms, r=ref, s=said), {"clock.alarms": alarms},
                   all_(some("clock.alarms", all_(fields(ident(goal)), days)), *_keeps(other),
                        eq("clock.alarms.length", len(alarms))),
                   {"clock.alarms": _swap(alarms, goal, {**goal, "days": want})},
                   ({"clock.alarms": _swap(alarms, goal, {**goal, "days": wrong})},),
                   {"alarm": goal, "days": want, "mode": mode})


@template(TEMPLATES, "clock.alarm_vibrate")
def alarm_vibrate(rng, fresh):
    """Turn vibration off (or on) for one alarm; the near-twin keeps its own."""
    want = rng.random() < 0.3
    alarms, goal, other, ref, _ = scene(rng, fresh, vibrate=not want)
    forms = (["Turn on vibration for {r}", "Make {r} vibrate"] if want else
             ["Turn off vibration for {r}", "Stop {r} from vibrating", "Make {r} ring without vibrating"])
    wrong = other or next(a for a in alarms if a is not goal)
    near = ({"clock.alarms": _swap(alarms, wrong, {**wrong, "vibrate": not wrong["vibrate"]})},)
    keeps = [some("clock.alarms", fields(a)) for a in alarms if a is not goal]
    return Variant(say(rng, "clock", forms, r=ref), {"clock.alarms": alarms},
                   all_(some("clock.alarms", all_(fields(ident(goal)), eq("item.vibrate", want))), *keeps),
                   {"clock.alarms": _swap(alarms, goal, {**goal, "vibrate": want})}, near,
                   {"alarm": goal, "vibrate": want})


def duration(rng) -> tuple[int, str]:
    """A timer length in seconds and how a user says it."""
    h, m, s = rng.choice([(0, rng.randint(1, 59), 0), (0, rng.randint(1, 20), rng.randrange(5, 60, 5)),
                          (rng.randint(1, 2), rng.randrange(0, 60, 5), 0), (0, 0, rng.randint(10, 59))])
    units = [(v, u) for v, u in ((h, "hour"), (m, "minute"), (s, "second")) if v]
    if rng.random() < 0.3:  # 1 hr 5 min, 45 sec
        said = " ".join(f"{v} {dict(hour='hr', minute='min', second='sec')[u]}" for v, u in units)
    else:
        said = " and ".join(f"{v} {u}{'s' if v != 1 else ''}" for v, u in units)
    return h * 3600 + m * 60 + s, said


@template(TEMPLATES, "clock.timer_start")
def timer_start(rng, fresh):
    """Start a timer of a drawn length, sometimes with a label."""
    total, said = duration(rng)
    label = rng.choice(TIMER_LABELS) if rng.random() < 0.3 else ""
    forms = (["Set a timer for {d}", "Start a timer for {d}", "Count down {d} with a timer"] if not label else
             ["Start a timer for {d} called {l}", "Set a timer for {d} and label it {l}"])
    timer = {"input": "000000", "set_seconds": total, "remaining": total, "state": "running", "label": label}
    check = [eq("clock.timer.set_seconds", total), eq("clock.timer.state", "running")]
    check += [eq("clock.timer.label", label)] if label else []
    return Variant(say(rng, "clock", forms, d=said, l=quoted(rng, label)), {}, all_(*check),
                   {"clock.tab": "timer", "clock.timer": timer},
                   ({"clock.timer": {**timer, "set_seconds": total + 60, "remaining": total + 60}},
                    {"clock.timer": {**timer, "state": "paused"}}), {"seconds": total, "label": label})


TIMER_OPS = {"pause": ("running", ["Pause the timer", "Hold the timer for a moment", "Pause my running timer"]),
             "resume": ("paused", ["Resume the timer", "Start the paused timer again", "Continue the timer"]),
             "delete": ("either", ["Delete the timer", "Cancel the timer and get rid of it", "Remove the timer"]),
             "add_minute": ("running", ["Add a minute to the timer", "Give the running timer one more minute",
                                        "Add 1 minute to the timer"]),
             "reset": ("paused", ["Reset the paused timer", "Reset the timer to its full time"])}


@template(TEMPLATES, "clock.timer_control")
def timer_control(rng, fresh):
    """Pause, resume, delete, reset a timer or add a minute to it (one is set up running or paused)."""
    op = rng.choice(sorted(TIMER_OPS))
    needs, forms = TIMER_OPS[op]
    state = rng.choice(["running", "paused"]) if needs == "either" else needs
    total = rng.choice([90, 300, 600, 900, 1500, 2700, 3600])
    left = rng.randint(10, total - 5)
    timer = {"input": "000000", "set_seconds": total, "remaining": left, "state": state,
             "label": rng.choice(TIMER_LABELS) if rng.random() < 0.3 else ""}
    setup = {"clock.tab": rng.choice(["timer", "timer", "alarm", "clock"]), "clock.timer": timer}
    after = {"pause": {"state": "paused"}, "resume": {"state": "running"}, "delete": {"state": "idle", "remaining": 0},
             "add_minute": {"remaining": left + 60}, "reset": {"state": "reset", "remaining": total}}[op]
    done = {**timer, **after}
    check = [eq("clock.timer.state", done["state"]), eq("clock.timer.set_seconds", total)]
    if op != "delete":
        check.append(eq("clock.timer.remaining", done["remaining"]))
    wrong = {"pause": {"state": "idle", "remaining": 0}, "resume": {"state": "running", "remaining": total},
             "delete": {"state": "reset", "remaining": total}, "add_minute": {"remaining": left + 120},
             "reset": {"state": "idle", "remaining": 0}}[op]
    return Variant(say(rng, "clock", forms), setup, all_(*check), {"clock.timer": done},
                   ({"clock.timer": {**timer, **wrong}},), {"op": op, "tab": setup["clock.tab"]})


STOPWATCH_OPS = {"start": ("idle", ["Start the stopwatch", "Start timing with the stopwatch"]),
                 "resume": ("paused", ["Resume the stopwatch", "Keep the paused stopwatch going"]),
                 "stop": ("running", ["Stop the stopwatch", "Pause the stopwatch"]),
                 "reset": ("paused", ["Reset the stopwatch", "Clear the stopwatch back to zero"]),
                 "lap": ("running", ["Record a lap on the stopwatch", "Take a lap time on the running stopwatch"])}


@template(TEMPLATES, "clock.stopwatch")
def stopwatch(rng, fresh):
    """Start, resume, stop, reset the stopwatch or record a lap (set up in the state that allows it)."""
    op = rng.choice(sorted(STOPWATCH_OPS))
    state, forms = STOPWATCH_OPS[op]
    elapsed = 0 if state == "idle" else rng.randint(5, 3600)
    laps = [] if state == "idle" else [{"n": n, "time": elapsed * n // 4} for n in range(rng.randint(0, 2), 0, -1)]
    watch = {"state": state, "elapsed": elapsed, "laps": laps}
    setup = {"clock.tab": rng.choice(["stopwatch", "stopwatch", "alarm", "timer"]), "clock.stopwatch": watch}
    lap = [{"n": len(laps) + 1, "time": elapsed}] + laps
    done, wrong, check = {
        "start": ({"state": "running"}, {"state": "idle"}, [eq("clock.stopwatch.state", "running")]),
        "resume": ({"state": "running"}, {"state": "running", "elapsed": 0, "laps": []},
                   [eq("clock.stopwatch.state", "running"), eq("clock.stopwatch.elapsed", elapsed)]),
        "stop": ({"state": "paused"}, {"state": "idle", "elapsed": 0, "laps": []},
                 [eq("clock.stopwatch.state", "paused"), eq("clock.stopwatch.elapsed", elapsed)]),
        "reset": ({"state": "idle", "elapsed": 0, "laps": []}, {"state": "running"},
                  [eq("clock.stopwatch.state", "idle"), eq("clock.stopwatch.elapsed", 0), eq("clock.stopwatch.laps", [])]),
        "lap": ({"laps": lap}, {"state": "paused"},
                [eq("clock.stopwatch.state", "running"), eq("clock.stopwatch.laps.length", len(laps) + 1)]),
    }[op]
    return Variant(say(rng, "clock", forms), setup, all_(*check), {"clock.stopwatch": {**watch, **done}},
                   ({"clock.stopwatch": {**watch, **wrong}},), {"op": op, "tab": setup["clock.tab"]})


@template(TEMPLATES, "clock.city_add")
def city_add(rng, fresh):
    """Add a city to the world clock; the cities already there stay."""
    city, other = rng.sample(CITIES, 2)
    setup = {"clock.cities": rng.sample([c for c in CITIES if c not in (city, other)], rng.randint(1, 3))} \
        if rng.random() < 0.5 else {}
    have = start_of(fresh, setup)["clock"]["cities"]
    forms = ["Add {c} to the world clock", "Show the time in {c} on my world clock", "Add the city {c} to my clocks",
             "Put {c} in the world clock list"]
    return Variant(say(rng, "clock", forms, c=city), setup,
                   all_(has("clock.cities", city), *(has("clock.cities", c) for c in have)),
                   {"clock.cities": have + [city]},
                   ({"clock.cities": have + [other]}, {"clock.cities": have[1:] + [city]}), {"city": city})


@template(TEMPLATES, "clock.city_remove")
def city_remove(rng, fresh):
    """Remove one city from the world clock; the others stay in their order."""
    cities = rng.sample(CITIES, rng.randint(2, 4))
    city = rng.choice(cities)
    rest = [c for c in cities if c != city]
    forms = ["Remove {c} from the world clock", "Delete {c} from my world clocks", "Take {c} off the world clock"]
    return Variant(say(rng, "clock", forms, c=city), {"clock.cities": cities}, eq("clock.cities", rest),
                   {"clock.cities": rest}, ({"clock.cities": [c for c in cities if c != rest[0]]}, {"clock.cities": []}),
                   {"city": city})
