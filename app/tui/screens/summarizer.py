"""Summarizer mode: drop documents in, watch ingestion and part progress, stream the summary."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Button, Input, Label, ProgressBar, Select

from agents.common import AgentError
from agents.events import Ingest, Part, Saved
from agents.prompts import STYLES
from engine.events import Done, Text
from memory import StoreError

from ..jobs import Job, one_line
from ..keys import bind
from ..widgets.transcript import Transcript
from .base import ModeScreen
from .dialogs import FilePicker


def parse_paths(text: str) -> list[Path]:
    """Paths from a paste or a drag-and-drop (quoted, backslash-escaped or file:// URLs)."""
    text = text.strip()
    if not text:
        return []
    try:
        parts = shlex.split(text)
    except ValueError:
        parts = text.splitlines()
    paths = []
    for part in parts:
        if part.startswith("file://"):
            from urllib.parse import unquote, urlparse
            part = unquote(urlparse(part).path)
        paths.append(Path(part).expanduser())
    return paths


class FileRow(Horizontal):
    def __init__(self, path: str):
        super().__init__(classes="file-row")
        self.path = path

    def compose(self) -> ComposeResult:
        yield Label(Path(self.path).name, classes="file-name")
        yield ProgressBar(total=None, show_eta=False, classes="file-progress")
        yield Label("", classes="file-state")

    ended = False         # read in, refused or cancelled: the row says so

    def progress(self, done: int, total: int, error: str | None = None) -> None:
        try:
            bar = self.query_one(ProgressBar)
            state = self.query_one(".file-state", Label)
        except NoMatches:      # a row just mounted (drawn after its first refresh) or being removed
            if self.is_attached:
                self.call_after_refresh(self.progress, done, total, error)
            return
        if error:         # the reason in full is a notification and the row's tooltip
            self.ended = True
            state.update("[yellow]cancelled[/yellow]" if error.endswith("cancelled; nothing was kept")
                         else "[red]not read[/red]")
            state.tooltip = error
            bar.update(total=1, progress=0)
        elif total:
            bar.update(total=total, progress=done)
            if done >= total:
                self.ended = True
                state.update("ingested")

    def stopped(self) -> None:
        """The request ended before this file was read in: an empty bar, not a waiting one."""
        if not self.ended and self.is_attached:
            self.ended = True
            try:
                self.query_one(ProgressBar).update(total=1, progress=0)
                self.query_one(".file-state", Label).update("[yellow]not read[/yellow]")
            except NoMatches:       # being removed: a new request's rows replace it
                pass


class SummarizerScreen(ModeScreen):
    MODE = "summarizer"
    DEFAULT_TITLE = "Summary"
    CONTINUES = False       # F5 does not continue a summary
    BINDINGS = [bind("summary.open", "open_file"), bind("summary.style", "cycle_style")]

    def compose_input(self) -> ComposeResult:
        with Vertical(id="files"):
            yield Label("", id="parts")
        with Horizontal(id="doc-bar"):
            yield Input(placeholder="Drop or paste a file path, Enter", id="path")
            yield Select([(s, s) for s in STYLES], value="short", allow_blank=False, id="style")
            yield Button("Browse…", id="browse")

    def focus_input(self) -> None:
        self.query_one("#path", Input).focus()

    def set_status(self, text: str) -> None:
        self.query_one("#parts", Label).update(text)

    def same_documents(self, paths: list[Path]) -> bool:
        """Whether this session already summarized exactly these documents (a summary in another
        style belongs with them); other documents get a session of their own."""
        names = sorted(p.name for p in paths)
        for view in self.query_one(Transcript).messages():
            head, _, listed = view.text.partition("): ")
            if view.role == "user" and head.startswith("Summarize (") and sorted(listed.split(", ")) == names:
                return True
        return False

    @property
    def style(self) -> str:
        return str(self.query_one("#style", Select).value)

    def action_cycle_style(self) -> None:
        select = self.query_one("#style", Select)
        select.value = STYLES[(STYLES.index(self.style) + 1) % len(STYLES)]

    def action_open_file(self) -> None:
        def picked(path: Path | None) -> None:
            if path is not None:
                self.summarize([path])
        self.app.push_screen(FilePicker(), picked)

    @on(Button.Pressed, "#browse")
    def _browse(self) -> None:
        self.action_open_file()

    @on(Input.Submitted, "#path")
    def _submitted(self, event: Input.Submitted) -> None:
        if self.summarize(parse_paths(event.value)):
            event.input.clear()

    def on_paste(self, event: events.Paste) -> None:
        """A drop or paste while the path box is not focused starts right away."""
        paths = parse_paths(event.text)
        if paths and all(p.exists() for p in paths):
            event.stop()
            self.summarize(paths)

    def refuse(self, paths: list[Path]) -> str | None:
        """Why these paths cannot be summarized (one line), or None."""
        for p in paths:
            if p.is_dir():
                return f"{p.name}: is a folder; drop the files themselves, or choose one with Ctrl+O"
            if not p.is_file():
                return f"No such file: {p}"
        return None

    def summarize(self, paths: list[Path]) -> bool:
        if not paths or not self.ready():
            return False
        if self.busy:
            self.notify("Still working: Esc cancels.", severity="warning")
            return False
        why_not = self.refuse(paths)
        if why_not:
            self.notify(why_not, severity="error")
            return False
        if self.session_id is not None and not self.same_documents(paths):
            self.session_id = None           # the agent opens a new one, named after the documents
            self.query_one(Transcript).remove_children()
        sid, agent, style = self.session_id, self.agent, self.style
        files = self.query_one("#files", Vertical)
        for row in files.query(FileRow):
            row.remove()
        for p in paths:
            files.mount(FileRow(str(p)))
        self.set_status(f"summary: {style} · reading {len(paths)} file{'s' if len(paths) > 1 else ''}")
        inbox = self.inbox

        def job(job: Job):
            docs = []
            for path in paths:
                name = str(path)
                yield Ingest(name, 0, 0)
                try:
                    doc = agent.ingest(path, session_id=sid, cancel=job.cancel,
                                       progress=lambda d, t, n=name: inbox.put(job.rid, Ingest(n, d, t)))
                except StoreError as exc:     # refused or cancelled: the reason names the file
                    yield Ingest(name, 0, 0, error=one_line(exc))
                    if job.cancel.is_set():
                        return
                    continue
                yield Ingest(name, 1, 1, doc_id=doc.id)
                docs.append(doc.id)
            if not docs:
                raise AgentError("No document could be read.")
            yield from agent.summarize(sid, docs, style, job.cancel)
        self.start(job, None)
        return True

    async def prepare_event(self, rid: int, event) -> None:
        """The summary's view appears with its first text (the map stage streams none). File rows
        follow every request, a cancelled one too: its last word is "cancelled; nothing was kept"."""
        if rid == self.active and rid not in self.views and isinstance(event, (Text, Done)):
            self.views[rid] = await self.query_one(Transcript).add("assistant")
        if isinstance(event, Ingest):
            for row in self.query(FileRow):
                if row.path == event.path:
                    row.progress(event.done, event.total, event.error)
            if event.error and rid == self.active:
                self.notify(event.error, severity="error")

    async def on_other_event(self, rid: int, event) -> None:
        if isinstance(event, Part):
            self.set_status(f"summarizing part {event.index}/{event.total}" if event.stage == "map"
                            else "combining the part summaries")

    def request_done(self, done: Done) -> None:
        if done.stop_reason == "max_tokens":
            self.set_status(f"[yellow]stopped at the token limit ({done.new_tokens}); "
                            f"F8 sets Max new tokens[/yellow]")
        elif done.stop_reason == "cancelled":
            self.set_status("cancelled")
        else:
            self.set_status(f"summary: {self.style} · done")

    async def job_finished(self, rid: int, error: str | None) -> None:
        if rid == self.active and error:
            self.set_status("[red]not summarized[/red]")
        await super().job_finished(rid, error)
        if not self.jobs:
            for row in self.query(FileRow):
                row.stopped()

    async def on_saved(self, rid: int, event: Saved) -> None:
        if event.role == "user":      # the request line ("Summarize (short): note.txt") is the agent's
            await self.query_one(Transcript).add("user", event.text, event.message_id)
        await super().on_saved(rid, event)

    def cancelled(self, rid: int) -> None:
        self.set_status("cancelled")
        self.notify("Cancelled: a document not fully read in is not added; a partial summary is kept.")

    def palette_commands(self) -> list[tuple[str, str, Callable]]:
        return super().palette_commands() + [
            ("Open a document to summarize", "File picker", self.action_open_file),
            ("Cycle summary style", "short → detailed → bullets", self.action_cycle_style),
        ]
