"""What an episode has done so far: the slots used up, the goals reached, the edges that did not
do what they predicted, what was tapped where. The planner reads it; the agent writes it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .goals import Goal, is_value
from .slots import TaskInfo


@dataclass
class Progress:
    task: TaskInfo
    used: set[int] = field(default_factory=set)               # slot indices used up
    reached: list[Goal] = field(default_factory=list)          # goals done, in order
    failed_edges: set[int] = field(default_factory=set)        # edges that did not do what they said
    refused: set[tuple] = field(default_factory=set)            # steps the phone refused (Step.key())
    failed_goals: set[tuple] = field(default_factory=set)      # goals given up
    acted: Counter = field(default_factory=Counter)            # (screen id, key, label, action) -> times
    goal: Goal | None = None                                   # the goal being worked on
    stalls: int = 0                                            # steps in a row that changed nothing
    scrolls: Counter = field(default_factory=Counter)          # screen id -> swipes made looking for a row
    absent: set[int] = field(default_factory=set)              # slots looked for in a list and not found
    typed: dict[str, str] = field(default_factory=dict)        # field key -> text typed in it
    pending: set[int] = field(default_factory=set)             # slots entered for a goal not yet confirmed
    selecting: bool = False                                    # items checked in a selection, not yet acted on
    stepped: dict = field(default_factory=dict)                # slider -> (value before the last step, direction)
    object: int | None = None                                  # the named object chosen last (its row tapped)
    reached_on: dict = field(default_factory=dict)             # goal id -> the objects it was reached on
    moved_on: set[int] = field(default_factory=set)            # objects done with: the next like one is due
    here: int | None = None                                    # the graph screen in front (the planner's)
    entered: dict = field(default_factory=dict)                # pending slot -> the screen it was entered on

    def wait(self, i: int) -> None:
        """Slot ``i`` was entered on the screen in front: it waits for that screen's OK."""
        self.pending.add(i)
        self.entered[i] = self.here

    def confirmed(self, screen: int | None) -> None:
        """What was entered on ``screen`` is taken by its OK, Save or Send; values entered on
        another page wait still (a message typed before the time picker's OK: its Send is
        after). Everything, when the screen is not known."""
        self.pending = {i for i in self.pending if screen is not None
                        and self.entered.get(i) not in (None, screen)}

    def unused(self) -> list[int]:
        return [i for i in range(len(self.task.slots)) if i not in self.used]

    ident: set[int] = field(default_factory=set)               # slots that name an object shown in a list

    def values_left(self) -> list[int]:
        """Values the task gives that still have to be entered (not those that name a row)."""
        return [i for i in self.unused() if is_value(self.task.slots[i]) and i not in self.ident]

    def data(self) -> frozenset[str]:
        """What this episode may put on the phone (the task's values, what it typed), lower-case:
        seen on screen afterwards it is the episode's data, not the app's (``UIScreen.observe``)."""
        return frozenset(t.strip().lower() for t in [*(s.text for s in self.task.slots), *self.typed.values()])

    def done_ids(self) -> set[tuple]:
        return {g.id for g in self.reached} | self.failed_goals
