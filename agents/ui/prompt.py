"""The model's view of one step: the task, the screen, what was done, and examples of the same
screen from earlier episodes (the step-level memory a 135M model can copy from)."""
from __future__ import annotations

from dataclasses import dataclass

from .. import prompts
from .screen import Element, Screen

RECENT_ACTIONS = 6       # earlier actions of this episode listed in the turn
MATCH = 0.6              # screens this alike (Jaccard of element lines) are "the same screen"


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
    """System prompt, examples as earlier exchanges, then this step."""
    out = [{"role": "system", "content": prompts.load("ui_agent_system")}]
    for ex in examples:
        out += [{"role": "user", "content": ex.screen_text}, {"role": "assistant", "content": ex.action}]
    out.append({"role": "user", "content": turn})
    return out


def similarity(a: str, b: str) -> float:
    """How alike two turns' screens are (their element lines, as sets)."""
    sa, sb = set(_screen_part(a)), set(_screen_part(b))
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def _screen_part(turn: str) -> list[str]:
    return [line for line in turn.splitlines() if not line.startswith(("Task:", "Done so far:"))]


def examples_for(turn: str, episodes, limit: int = 2) -> list[Example]:
    """The steps of similar past episodes taken on a screen like this one, best first."""
    found: list[Example] = []
    for score, episode in episodes:
        best = None
        for step in episode.steps:
            text = step.get("turn", "")
            s = similarity(turn, text) if text else 0.0
            if s >= MATCH and (best is None or s > best.score):
                best = Example(episode.task, text, step["action"], s * score)
        if best is not None:
            found.append(best)
    found.sort(key=lambda ex: ex.score, reverse=True)
    return found[:limit]
