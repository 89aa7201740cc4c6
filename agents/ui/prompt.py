"""The model's view of one step: the task, the screen, what was done, and examples of the same
screen from earlier episodes (the step-level memory a 135M model can copy from)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import prompts
from .screen import Element, Screen

RECENT_ACTIONS = 6       # earlier actions of this episode listed in the turn
MATCH = 0.6              # screens this alike (Jaccard of element labels) are "the same screen"
SAME_KIND = 0.8          # tasks this alike (cosine of MiniLM vectors) lend each other their steps
SAME_TASK = 0.95         # ... and their ending: the task is worded (nearly) the same


@dataclass
class Example:
    task: str
    screen_text: str     # the turn the action was chosen on, as the model saw it
    action: str
    score: float


def app_name(package: str, apps: dict[str, str]) -> str:
    for name, pkg in apps.items():
        if pkg == package:
            return name
    return {"": "unknown", "com.google.android.apps.nexuslauncher": "Home screen",
            "com.android.launcher3": "Home screen"}.get(package, package)


def screen_lines(shown: list[Element]) -> list[str]:
    return [f"{i}. {e.describe()}" for i, e in enumerate(shown, 1)]


def turn_text(task: str, screen: Screen, shown: list[Element], apps: dict[str, str],
              done: list[str]) -> str:
    """The user turn of one step. Its screen part is also what similar screens are matched on."""
    lines = [f"Task: {task}", f"App: {app_name(screen.package, apps)}"]
    if screen.title:
        lines.append(f"Title: {screen.title}")
    lines.append("Screen:")
    lines += screen_lines(shown) or ["(nothing to tap)"]
    if screen.scrollable:
        lines.append("The list scrolls.")
    if done:
        lines.append("Done so far: " + ", ".join(done[-RECENT_ACTIONS:]))
    return "\n".join(lines)


def messages(turn: str, examples: list[Example]) -> list[dict]:
    """System prompt and this step, with the best example as one line at the end of the turn.
    Why not as earlier exchanges: shown the same screen answered with tap(1), SmolLM2-135M
    answers tap(2) (it continues the count); a line right before the answer is copied (tap(1),
    tap(3), tap(7) all copied in a probe; done() and back() were not: its prior for tap wins)."""
    if examples:
        ex = examples[0]
        turn += f'\nLast time, for "{ex.task}" on this screen: {ex.action}'
    return [{"role": "system", "content": prompts.load("ui_agent_system")},
            {"role": "user", "content": turn}]


def _labels(turn: str) -> set[str]:
    """The elements of a turn's screen as described (label, state), whatever their numbers."""
    return set(re.findall(r"^\d+\. (.*)$", turn, re.M))


def similarity(a: str, b: str) -> float:
    """How alike two turns' screens are: their apps, titles and elements (a switch flipped
    makes another screen: before and after a flip call for different steps)."""
    head = [line for line in a.splitlines() if line.startswith(("App:", "Title:"))]
    if head != [line for line in b.splitlines() if line.startswith(("App:", "Title:"))]:
        return 0.0
    la, lb = _labels(a), _labels(b)
    return len(la & lb) / len(la | lb) if la | lb else 1.0


def examples_for(turn: str, shown: list[Element], episodes, limit: int = 2) -> list[Example]:
    """Steps of similar past episodes taken on this screen, best first, rewritten onto this
    turn's numbering: the example shows this very screen and the element it chose under the
    number that element has now (ranking orders a screen by the task, so numbers differ between
    tasks while the element is the same). A step ending an episode counts only for a task
    worded alike: "turn on" and "turn off" Bluetooth end on screens that look the same."""
    labels = [e.label for e in shown]
    found: list[Example] = []
    for score, episode in episodes:
        if score < SAME_KIND:
            continue
        best = None
        for step in episode.steps:
            text = step.get("turn", "")
            s = similarity(turn, text) if text else 0.0
            if s < MATCH or (best is not None and s <= best.score):
                continue
            action = _retarget(step["action"], _element(text, step["action"]), labels)
            if action is None or (action.startswith("done(") and score < SAME_TASK):
                continue
            best = Example(episode.task, _with_task(turn, episode.task), action, s * score)
        if best is not None:
            found.append(best)
    found.sort(key=lambda ex: ex.score, reverse=True)
    return found[:limit]


def _element(turn: str, action: str) -> str | None:
    m = re.match(r"(?:tap|long_press|type)\((\d+)", action)
    if not m:
        return None
    line = re.search(rf'^{m[1]}\. "([^"]*)"', turn, re.M)
    return line[1] if line else ""


def _retarget(action: str, label: str | None, labels: list[str]) -> str | None:
    """``action`` with its element number for this screen (None: that element is not shown)."""
    if label is None:
        return action
    if label not in labels:
        return None
    return re.sub(r"\((\d+)", f"({labels.index(label) + 1}", action, count=1)


def _with_task(turn: str, task: str) -> str:
    lines = turn.splitlines()
    return "\n".join([f"Task: {task}"] + [line for line in lines[1:] if not line.startswith("Done so far:")])
