"""The agent mode's exploration progress: apps done of all, the app under way's actions of its
budget, screens and edges found so far. Shown only while exploring."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar


class ExploreBar(Horizontal):
    DEFAULT_CSS = """
    ExploreBar { height: 1; display: none; padding: 0 1; }
    ExploreBar.running { display: block; }
    ExploreBar ProgressBar { width: 32; }
    ExploreBar #explore-text { width: 1fr; margin: 0 0 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.budget = 1
        self.apps = 1
        self.text = ""

    def compose(self) -> ComposeResult:
        yield ProgressBar(total=1, show_eta=False, id="explore-progress")
        yield Label("", id="explore-text", markup=False)

    def begin(self, apps: int, budget: int) -> None:
        self.apps, self.budget = max(1, apps), max(1, budget)
        self.query_one(ProgressBar).update(total=self.apps * self.budget, progress=0)
        self._say(f"app 1/{apps}: starting…")
        self.add_class("running")

    def progress(self, index: int, name: str, report) -> None:
        self.query_one(ProgressBar).update(progress=index * self.budget + min(report.actions, self.budget))
        self._say(f"app {index + 1}/{self.apps} · {name}: {report.actions}/{report.budget} actions · "
                  f"{report.screens} screens · {report.edges} edges")

    def app_done(self, index: int) -> None:
        self.query_one(ProgressBar).update(progress=(index + 1) * self.budget)

    def stopping(self) -> None:
        self._say("stopping after the action under way…")

    def end(self) -> None:
        self.remove_class("running")

    def _say(self, text: str) -> None:
        self.text = text
        self.query_one("#explore-text", Label).update(text)
