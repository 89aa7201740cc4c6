"""Settings screen (F8): edit, check and save to config.toml.

It shows the values in effect. A value set for this run by an environment variable or a flag is
marked; Save writes only the fields the user changed here, so a one-off override never lands in
the file. The methods and backends offered are the engine's own (``engine.methods``); the models
offered are the ones found on this machine (``app.model_catalog``), any path can still be typed.
It opens on its first field; Enter in a field or Ctrl+S saves, Esc cancels. Below the common
fields, the advanced group: every option of the file's [engine], [qnn] and [memory] tables, each
with where its value comes from (default, config.toml, or the variable that sets it this run).
"""
from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Switch

from app.model_catalog import find_models
from app.settings import NULLABLE, ConfigError, Loaded, Settings, env_var, key, parse, specs
from engine.methods import BACKENDS, METHODS

# (field, label) in the order shown
FIELDS = (("model", "Model"), ("backend", "Backend"), ("method", "Decoding method"),
          ("max_tokens", "Max new tokens"), ("temperature", "Temperature"), ("top_p", "Top-p"),
          ("context", "Context (tokens)"), ("threads", "Threads"),
          ("retrieval", "Retrieval from memory"), ("history_drafting", "Drafting from history"),
          # agent mode
          ("device", "Phone (HOST:PORT)"), ("agent_steps", "Agent: most steps"),
          ("agent_policy", "Agent: how it picks steps"), ("agent_elements", "Agent: screen elements"))
PICK = "pick-model"      # the found models, below the model field: choosing one fills it in
# the advanced group: the file's tables, in declaration order (the engine's apply on a model reload,
# the memory's at the next start)
ADVANCED = tuple(name for name, (spec, _) in specs().items() if spec.section)


class SettingsScreen(ModalScreen[dict | None]):
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", show=False),
                Binding("ctrl+s", "save", "Save", show=False, priority=True)]
    DEFAULT_CLASSES = "dialog"

    def __init__(self, settings: Settings, loaded: Loaded):
        super().__init__()
        self.settings, self.loaded = settings, loaded

    def editor(self, name: str):
        value = getattr(self.settings, name)
        if name == "backend":
            return Select([(b, b) for b in BACKENDS], value=value, allow_blank=False, id=name)
        if name == "method":
            return Select([(m, m) for m in METHODS], value=value, allow_blank=False, id=name)
        spec, kind = specs()[name]
        if spec.section and spec.choices:
            return Select([(c, c) for c in spec.choices], value=value, allow_blank=False, id=name)
        if kind is bool and name in NULLABLE:                 # auto (None), true or false
            word = {None: "auto", True: "true", False: "false"}[value]
            return Select([(w, w) for w in ("auto", "true", "false")], value=word, allow_blank=False, id=name)
        if kind is bool:
            return Switch(value, id=name)
        placeholder = {"model": "embedded SmolLM2-135M-Instruct", "context": "backend default",
                       "threads": "all cores", "engine_cc": "cc, gcc or clang on PATH",
                       "memory_embed_model": "bundled all-MiniLM-L6-v2",
                       "memory_embed_threads": "the default"}.get(name, "")
        return Input("" if value is None else str(value), placeholder=placeholder, id=name,
                     type={int: "integer", float: "number"}.get(kind, "text"))

    def compose(self) -> ComposeResult:
        with Vertical(classes="box tall", id="settings"):
            yield Label("Settings", classes="title")
            with VerticalScroll(id="settings-scroll"), Grid(id="settings-grid"):
                for name, label in FIELDS:
                    override = self.loaded.overridden(name)
                    yield Label(label + (f"\n[dim]{override} this run[/dim]" if override else ""))
                    yield self.editor(name)
                    if name == "model":
                        yield Label("[dim]Models found[/dim]")
                        yield Select([], prompt="looking for models…", id=PICK)
                yield Label("[b]Advanced[/b]\n[dim]config.toml tables[/dim]")
                yield Label("[dim]engine: applied on a model reload; memory: at the next start[/dim]")
                for name in ADVANCED:
                    origin = self.loaded.origins.get(name, "default")
                    yield Label(f"{key(name)}\n[dim]{origin}{' this run' if origin == env_var(name) else ''}"
                                f"[/dim]", markup=True)
                    yield self.editor(name)
            yield Label(f"Enter or Ctrl+S saves to {self.loaded.path} (only what you change here); "
                        f"Esc cancels", classes="dim", markup=False)
            yield Horizontal(Button("Save", variant="primary", id="ok"), Button("Cancel", id="cancel"),
                             classes="buttons")

    def on_mount(self) -> None:
        self.query_one("#model").focus()
        self.look_for_models()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def look_for_models(self) -> None:
        """The models on this machine (headers only: ~10 ms for a few files), off the UI thread."""
        try:
            found = [m for m in find_models(self.app.locs) if m.supported]  # type: ignore[attr-defined]
        except Exception:
            found = []
        self.app.call_from_thread(self.offer_models, found)

    def offer_models(self, found) -> None:
        options = [(f"{m.name} · {m.size_mb:,.0f} MB · {m.architecture} {m.quant}", m.path) for m in found]
        pick = self.query_one(f"#{PICK}", Select)
        pick.set_options(options)
        pick.prompt = "choose one to fill in the model" if options else "none found (hexa models)"

    @on(Select.Changed, f"#{PICK}")
    def _picked(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL:
            self.query_one("#model", Input).value = str(event.value)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.save()

    def action_save(self) -> None:
        self.save()

    def changes(self) -> dict[str, Any]:
        """The fields whose value differs from the one in effect (checked; raises ConfigError)."""
        out = {}
        for name in [n for n, _ in FIELDS] + list(ADVANCED):
            raw = self.query_one(f"#{name}").value  # type: ignore[attr-defined]
            value = parse(name, raw.strip() if isinstance(raw, str) else raw, "settings")
            if value != getattr(self.settings, name):
                out[name] = value
        return out

    @on(Button.Pressed, "#ok")
    def save(self) -> None:
        try:
            changes = self.changes()
        except ConfigError as exc:
            self.notify(str(exc), severity="error")
            return
        self.dismiss(changes)

    @on(Button.Pressed, "#cancel")
    def action_dismiss_none(self) -> None:
        self.dismiss(None)
