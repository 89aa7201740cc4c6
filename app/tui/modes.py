"""The app's modes. A new mode is one more entry here (a screen class with a name and a key)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from textual.screen import Screen


@dataclass(frozen=True)
class ModeSpec:
    name: str                        # also the memory session "mode"
    title: str
    binding_id: str                  # in keys.KEYS, e.g. "mode.assistant"
    screen: Callable[[], Screen]


def mode_specs() -> list[ModeSpec]:
    from .screens.agent import AgentScreen
    from .screens.assistant import AssistantScreen
    from .screens.summarizer import SummarizerScreen
    return [
        ModeSpec("assistant", "Assistant", "mode.assistant", AssistantScreen),
        ModeSpec("summarizer", "Summarizer", "mode.summarizer", SummarizerScreen),
        ModeSpec("agent", "Agent", "mode.agent", AgentScreen),
    ]
