"""HexaApp: one app, a screen per mode (see modes.py), live panels, settings, help and palette."""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable

from textual import work
from textual.app import App, SystemCommand
from textual.css.query import NoMatches
from textual.screen import Screen

from app.keys import KEYS
from app.settings import ConfigError, Loaded, apply, save_changes, specs

from .commands import DocumentsProvider, SessionsProvider
from .jobs import job_threads, one_line
from .keys import bind
from .messages import RuntimeReady
from .metrics import DeviceInfo, process_rss_mb
from .modes import mode_specs
from .runtime import (EngineFactory, MemoryFactory, Runtime, app_engine, build_runtime, default_memory,
                      open_temporary_memory)
from .screens.base import ModeScreen
from .screens.help import HelpScreen
from .screens.settings import SettingsScreen

SPECS = mode_specs()
# a change of these reloads the model (the [engine] and [qnn] options included)
ENGINE_FIELDS = ("model", "backend", "threads", "context",
                 *(n for n, (spec, _) in specs().items() if spec.section in ("engine", "qnn")))
QUIT_WAIT_S = 5.0     # how long Ctrl+Q waits for a cancelled request to store its partial answer


class HexaApp(App):
    CSS_PATH = Path(__file__).with_name("hexa.tcss")     # absolute: subclasses live elsewhere
    TITLE = "hexa"
    MODES = {spec.name: spec.screen for spec in SPECS}
    COMMANDS = App.COMMANDS | {SessionsProvider, DocumentsProvider}
    BINDINGS = [
        bind("app.quit", "quit", priority=True, show=False),
        bind("app.palette", "command_palette", priority=True, show=False),
        bind("app.help", "help"),
        bind("app.settings", "settings"),
        bind("mode.next", "next_mode", show=False),
        *[bind(spec.binding_id, f"mode('{spec.name}')", show=False) for spec in SPECS],
    ]

    def __init__(self, loaded: Loaded, locations: Any, *, engine_factory: EngineFactory = app_engine,
                 memory_factory: MemoryFactory | None = None,
                 fallback_memory: Callable = open_temporary_memory,
                 rss_probe: Callable[[], float] = process_rss_mb, start_mode: str | None = None):
        super().__init__()
        self.loaded, self.settings, self.locs = loaded, loaded.settings, locations
        # the default memory gets the [memory] options of the settings it starts with
        memory_factory = memory_factory or (lambda locs, engine: default_memory(locs, engine, self.settings))
        self.engine_factory, self.memory_factory = engine_factory, memory_factory
        self.fallback_memory = fallback_memory          # a temporary memory, if the real one fails
        self.rss_probe = rss_probe
        self.start_mode = start_mode or SPECS[0].name
        self.specs = SPECS
        self.mode_screens: list[ModeScreen] = []      # every mode screen mounted so far
        self.runtime: Runtime | None = None
        self.load_error: str | None = None            # why the last model load failed
        self.device = DeviceInfo(method=self.settings.method, backend=self.settings.backend)
        self.status = "loading model…"
        self.quitting = False
        self.job_threads = job_threads()
        self.memory_warm = threading.Event()          # the embedder and vector index are loaded

    def key_label(self, binding_id: str) -> str:
        return self.settings.keymap.get(binding_id, KEYS[binding_id][0]).upper()

    # -- start-up -----------------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.settings.keymap:
            self.set_keymap(self.settings.keymap)
        self.switch_mode(self.start_mode)
        for problem in self.loaded.problems:
            self.notify(f"{problem} — ignored.", title="Settings", severity="error", timeout=12)
        self._probe()
        self.set_interval(2.0, self._probe)
        self.load_runtime()

    def _probe(self) -> None:
        engine = getattr(self.runtime, "engine", None)
        pid = getattr(getattr(engine, "proc", None), "pid", None)     # a child process's (ChildEngine)
        self.device.child_mb = process_rss_mb(pid) if pid else 0.0
        if pid:                                 # a child started again names its new process
            self.device.backend = engine.backend_name
        self.device.rss_mb = self.rss_probe() + self.device.child_mb
        parts = getattr(engine, "resident_bytes", None)
        if parts is not None:
            self.device.engine_mb = {k: v / 1e6 for k, v in parts().items()}
        for screen in self.mode_screens:    # idle panels show it now, not at the next request
            if screen.is_current and not screen.busy:
                try:
                    screen.show_panels()
                except NoMatches:           # the screen is being taken down (quitting)
                    pass

    def set_status(self, text: str) -> None:
        self.status = text
        for screen in self.mode_screens:
            screen.refresh_bar()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_runtime(self, previous: Runtime | None = None) -> None:
        def progress(text: str) -> None:
            self.call_from_thread(self.set_status, f"loading: {text}")
        try:
            runtime = build_runtime(self.settings, self.locs, progress, self.engine_factory,
                                    self.memory_factory, previous, self.fallback_memory)
        except Exception as exc:
            self.call_from_thread(self._load_failed, one_line(exc))
            return
        self.call_from_thread(self._runtime_ready, runtime)

    def _load_failed(self, error: str) -> None:
        self.load_error = error
        self.set_status("[red]model not loaded[/red]")
        self.notify(error, title="Cannot load the model", severity="error", timeout=15)

    def _runtime_ready(self, runtime: Runtime) -> None:
        self.runtime, self.load_error = runtime, None
        self.device = replace(self.device, model=runtime.engine.model_name, backend=runtime.engine.backend_name,
                              memory="temporary (not saved)" if runtime.memory_problem else "")
        if runtime.memory_problem:
            self.notify(f"{runtime.memory_problem}. Chatting with a temporary memory: nothing is kept "
                        f"after you quit.", title="Memory unavailable", severity="error", timeout=20)
        self.set_status("[yellow]memory: temporary[/yellow]" if runtime.memory_problem else "")
        for screen in self.mode_screens:
            screen.post_message(RuntimeReady())
        self.warm_memory(runtime.memory)

    @work(thread=True, exclusive=True, group="warmup", exit_on_error=False)
    def warm_memory(self, memory: Any) -> None:
        """Load the vector index and embedding model now, so the first reply isn't the one that waits."""
        try:
            memory.warmup()
        except Exception as exc:
            self.call_from_thread(self.notify, one_line(exc), title="Memory", severity="warning")
        finally:
            self.memory_warm.set()

    # -- actions ------------------------------------------------------------------------------------
    def action_mode(self, name: str) -> None:
        self.switch_mode(name)

    def action_next_mode(self) -> None:
        names = [s.name for s in SPECS]
        current = self.current_mode if self.current_mode in names else names[0]
        self.switch_mode(names[(names.index(current) + 1) % len(names)])

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_settings(self) -> None:
        if not isinstance(self.screen, SettingsScreen):
            self.push_screen(SettingsScreen(self.settings, self.loaded), self.apply_changes)

    def apply_changes(self, changes: dict | None, save: bool = True) -> None:
        """Settings changed in F8: saved to config.toml (only these), applied to this run."""
        if not changes:
            return
        if save:
            try:
                path = save_changes(self.locs.config_file, changes)
                self.notify(f"Settings saved to {path}")
            except (ConfigError, OSError) as exc:
                self.notify(f"Settings not saved: {one_line(exc)}", severity="error", timeout=12)
        old, self.settings = self.settings, apply(self.settings, **changes)
        self.loaded.settings = self.settings
        for name in changes:                       # the user's choice now beats a one-off override
            self.loaded.origins[name] = "config.toml"
        self.set_keymap(self.settings.keymap)
        self.device.method = self.settings.method
        if self.runtime is not None:
            self.runtime.update_settings(self.settings)
        # reload on a model change, also after a failed load (the user just fixed the model in F8)
        if any(getattr(old, f) != getattr(self.settings, f) for f in ENGINE_FIELDS) and (
                self.runtime is not None or self.load_error is not None):
            previous, self.runtime, self.load_error = self.runtime, None, None
            self.set_status("reloading model…")
            self.load_runtime(previous)

    async def open_session(self, session) -> None:
        await self.switch_mode(session.mode)
        screen = self.screen
        if isinstance(screen, ModeScreen):
            await screen.open_session(session.id)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for spec in SPECS:
            yield SystemCommand(f"Mode: {spec.title}", f"Switch to the {spec.title.lower()} mode",
                                lambda name=spec.name: self.switch_mode(name))
        yield SystemCommand("Settings", "Model, decoding, retrieval… (saved to config.toml)", self.action_settings)
        yield SystemCommand("Help", "Keys and commands", self.action_help)
        if isinstance(screen, ModeScreen):
            for title, help_text, callback in screen.palette_commands():
                yield SystemCommand(title, help_text, callback)

    # -- quitting -----------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """Cancel what is running, give it a moment to store its partial answer, then quit."""
        if self.quitting:
            self.exit()                            # a second Ctrl+Q: do not wait
            return
        self.quitting = True
        jobs = [job for screen in self.mode_screens for job in screen.cancel_all()]
        if jobs:
            self.set_status("saving the partial answer…")
            deadline = time.monotonic() + QUIT_WAIT_S
            while not all(job.done.is_set() for job in jobs) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        self.exit()

    def on_unmount(self) -> None:
        for screen in self.mode_screens:
            screen.cancel_all()
        self.job_threads.shutdown(wait=False, cancel_futures=True)
        if self.runtime is not None:
            try:
                self.runtime.close()
            except Exception:
                pass
