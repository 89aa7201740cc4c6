"""HexaApp: one app, a screen per mode (see modes.py), live panels, settings, help and palette."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable

from textual import work
from textual.app import App, SystemCommand
from textual.screen import Screen

from agents.common import available_methods
from app.config import Settings, save_settings

from .commands import SessionsProvider
from .keys import bind
from .messages import RuntimeReady
from .metrics import Metrics, process_rss_mb
from .modes import mode_specs
from .runtime import EngineFactory, MemoryFactory, Runtime, load_engine, open_memory
from .screens.base import ModeScreen, one_line
from .screens.help import HelpScreen
from .screens.settings import SettingsScreen

SPECS = mode_specs()
ENGINE_FIELDS = ("model", "backend", "threads", "context")


class HexaApp(App):
    CSS_PATH = "hexa.tcss"
    TITLE = "hexa"
    MODES = {spec.name: spec.screen for spec in SPECS}
    COMMANDS = App.COMMANDS | {SessionsProvider}
    BINDINGS = [
        bind("app.quit", "quit", priority=True, show=False),
        bind("app.palette", "command_palette", priority=True, show=False),
        bind("app.help", "help"),
        bind("app.settings", "settings"),
        bind("mode.next", "next_mode", show=False),
        *[bind(spec.binding_id, f"mode('{spec.name}')", show=False) for spec in SPECS],
    ]

    def __init__(self, settings: Settings, locations: Any, *, engine_factory: EngineFactory = load_engine,
                 memory: Any = None, memory_factory: MemoryFactory = open_memory,
                 rss_probe: Callable[[], float] = process_rss_mb, config_error: str | None = None,
                 start_mode: str | None = None):
        super().__init__()
        self.settings, self.locs = settings, locations
        self.engine_factory, self.memory_factory = engine_factory, memory_factory
        self._memory = memory
        self.rss_probe = rss_probe
        self.config_error = config_error
        self.start_mode = start_mode or SPECS[0].name
        self.specs = SPECS
        self.runtime: Runtime | None = None
        self.load_error: str | None = None        # why the last model load failed
        self.metrics = Metrics(method=settings.method, backend=settings.backend)
        self.status = "loading model…"

    # -- start-up -----------------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.settings.keymap:
            self.set_keymap(self.settings.keymap)
        self.switch_mode(self.start_mode)
        if self.config_error:
            self.notify(f"{self.config_error} — using defaults.", title="Config", severity="error", timeout=10)
        self._probe()
        self.set_interval(2.0, self._probe)
        self.load_runtime()

    def _probe(self) -> None:
        self.metrics.rss_mb = self.rss_probe()

    def set_status(self, text: str) -> None:
        self.status = text
        for screen in self.mode_screens():
            screen.refresh_bar()

    def mode_screens(self) -> list[ModeScreen]:
        return [s for stack in self._screen_stacks.values() for s in stack if isinstance(s, ModeScreen)]

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_runtime(self, memory: Any = None) -> None:
        def progress(text: str) -> None:
            self.call_from_thread(self.set_status, f"loading: {text}")
        try:
            engine = self.engine_factory(self.settings, self.locs, progress)
            memory = memory or self._memory or self.memory_factory(self.locs, engine)
        except Exception as exc:
            self.call_from_thread(self._load_failed, one_line(exc))
            return
        self.call_from_thread(self._runtime_ready, Runtime(engine, memory, self.settings))

    def _load_failed(self, error: str) -> None:
        self.load_error = error
        self.set_status("[red]model not loaded[/red]")
        self.notify(error, title="Cannot load the model", severity="error", timeout=15)

    def _runtime_ready(self, runtime: Runtime) -> None:
        self.runtime, self.load_error = runtime, None
        methods = available_methods(runtime.engine)
        if methods and self.settings.method not in methods:
            fallback = "vanilla" if "vanilla" in methods else methods[0]
            self.notify(f"Decoding method {self.settings.method!r} is not available: using {fallback!r}.",
                        severity="warning")
            self.settings = replace(self.settings, method=fallback)
            runtime.update_settings(self.settings)
            self.metrics.method = fallback
        self.metrics.model = runtime.engine.model_name
        self.metrics.backend = runtime.engine.backend_name
        self.set_status("")
        for screen in self.mode_screens():
            screen.post_message(RuntimeReady())
        self.warm_memory(runtime.memory)

    @work(thread=True, exclusive=True, group="warmup", exit_on_error=False)
    def warm_memory(self, memory: Any) -> None:
        """Load the vector index and embedding model now, so the first reply isn't the one that waits."""
        warmup = getattr(memory, "warmup", None)
        if warmup is None:
            return
        try:
            warmup()
        except Exception as exc:
            self.call_from_thread(self.notify, one_line(exc), title="Memory", severity="warning")

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
            self.push_screen(SettingsScreen(self.settings, str(self.locs.config_file)), self.apply_settings)

    def apply_settings(self, new: Settings | None, save: bool = True) -> None:
        if new is None:
            return
        old, self.settings = self.settings, new
        if save:
            try:
                path = save_settings(new, self.locs.config_file)
                self.notify(f"Settings saved to {path}")
            except OSError as exc:
                self.notify(f"Cannot save settings: {exc.strerror}", severity="error")
        self.set_keymap(new.keymap)
        self.metrics.method = new.method
        if self.runtime is not None:
            self.runtime.update_settings(new)
        # reload on a model change, also after a failed load (the user just fixed the model in F8)
        if any(getattr(old, f) != getattr(new, f) for f in ENGINE_FIELDS) and (
                self.runtime is not None or self.load_error is not None):
            memory = self.runtime.memory if self.runtime is not None else None
            self.runtime, self.load_error = None, None
            self.set_status("reloading model…")
            self.load_runtime(memory)

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

    async def on_unmount(self) -> None:
        runtime = self.runtime
        for screen in self.mode_screens():
            if screen.cancel_event is not None:
                screen.cancel_event.set()
        if runtime is not None and self._memory is None:
            try:
                runtime.memory.close()
            except Exception:
                pass


