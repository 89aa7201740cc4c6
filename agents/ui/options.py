"""What the app tells the UI agent (built from its settings; the agent never reads them itself)."""
from __future__ import annotations

from dataclasses import dataclass

POLICIES = ("top", "planner", "model")


@dataclass(frozen=True)
class AgentOptions:
    policy: str = "planner"        # top: tap the best-ranked element (the baseline); planner: the
                                   # planner's first step; model: the model chooses close calls.
                                   # planner by default: on 120 tasks (96 shipped, 24 fresh
                                   # variants) the model's choices cost 6 points (planner+verify
                                   # 62%, model+verify 56%; agent-bench --ladder, 2026-11-24)
    verify: bool = True            # check every step's effect, replan and back off on a mismatch
    recall: bool = True            # replay what worked for similar tasks (and avoid what did not)
    max_steps: int = 15
    elements: int = 10             # the top policy: elements ranked per screen
    method: str = "hexa"           # the engine's decoding method for the model's choices
    history_drafting: bool = True  # past episodes' choices as drafting sources
    settle_s: float = 0.0          # wait after an action (a real phone animates)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy {self.policy!r}: expected one of {', '.join(POLICIES)}")
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
