"""User settings: a TOML file in the config folder, overridden by environment variables, then CLI flags.

Precedence (lowest to highest): defaults < ``config.toml`` < ``HEXA_*`` environment < command-line flags.
A bad file or variable raises :class:`ConfigError` with a one-line message; the CLI prints it and exits 2,
the TUI shows it as a notification and falls back to defaults (see :func:`load_settings_lenient`).
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

import tomli_w

METHODS = ("hexa", "sam", "pld", "vanilla")
BACKENDS = ("torch", "qnn")


class ConfigError(Exception):
    """A user-fixable problem with the configuration (one line)."""


@dataclass(frozen=True)
class Settings:
    model: str | None = None          # None: the embedded model (SmolLM2-135M-Instruct)
    backend: str = "torch"
    method: str = "hexa"              # decoding method: "vanilla" or a speculative one
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    retrieval: bool = True            # retrieve context from memory for each request
    history_drafting: bool = True     # feed past responses to the engine as drafting sources
    threads: int | None = None
    context: int | None = None        # context window in tokens; None: the backend's default
    keymap: dict[str, str] = field(default_factory=dict)   # binding id -> keys, e.g. {"chat.send": "ctrl+s"}

    # -- conversions ---------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], origin: str = "config") -> "Settings":
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, raw in data.items():
            if key not in known:
                raise ConfigError(f"{origin}: unknown setting {key!r} (known: {', '.join(known)})")
            values[key] = _coerce(key, raw, origin)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """TOML-ready mapping (None values are left out: TOML has no null)."""
        return {k: v for k, v in asdict(self).items() if v is not None and v != {}}

    def merged(self, **overrides: Any) -> "Settings":
        """A copy with every non-None override applied (validated)."""
        clean = {k: _coerce(k, v, "override") for k, v in overrides.items() if v is not None}
        if "keymap" in clean:
            clean["keymap"] = {**self.keymap, **clean["keymap"]}
        return replace(self, **clean)

    @property
    def speculative(self) -> bool:
        return self.method != "vanilla"


def _coerce(key: str, raw: Any, origin: str) -> Any:
    """Validate one value; strings (from the environment) are parsed to the field's type."""
    def bad(why: str) -> ConfigError:
        return ConfigError(f"{origin}: {key} = {raw!r}: {why}")

    if key in ("model",):
        if raw is None or raw == "":
            return None
        if not isinstance(raw, str):
            raise bad("expected a string")
        return raw
    if key == "backend":
        if raw not in BACKENDS:
            raise bad(f"expected one of {', '.join(BACKENDS)}")
        return raw
    if key == "method":
        if not isinstance(raw, str) or not raw.strip():
            raise bad("expected a decoding method name, e.g. " + ", ".join(METHODS))
        return raw.strip()
    if key in ("max_tokens", "threads", "context"):
        if key in ("threads", "context") and (raw is None or raw == ""):
            return None
        try:
            value = int(raw) if not isinstance(raw, bool) else None
        except (TypeError, ValueError):
            value = None
        if value is None or value < (64 if key == "context" else 1):
            raise bad("expected an integer of at least 64" if key == "context" else "expected a positive integer")
        return value
    if key in ("temperature", "top_p"):
        try:
            value = float(raw) if not isinstance(raw, bool) else None
        except (TypeError, ValueError):
            value = None
        hi = 2.0 if key == "temperature" else 1.0
        if value is None or not 0.0 <= value <= hi:
            raise bad(f"expected a number between 0 and {hi:g}")
        return value
    if key in ("retrieval", "history_drafting"):
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(raw, str) and raw.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise bad("expected true or false")
    if key == "keymap":
        if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in raw.items()):
            raise bad("expected a table of binding id = \"keys\"")
        return dict(raw)
    raise ConfigError(f"{origin}: unknown setting {key!r}")


# Environment variables: HEXA_MODEL, HEXA_BACKEND, HEXA_METHOD, HEXA_MAX_TOKENS, HEXA_TEMPERATURE,
# HEXA_TOP_P, HEXA_RETRIEVAL, HEXA_HISTORY_DRAFTING, HEXA_THREADS, HEXA_CONTEXT.
ENV_VARS = {f"HEXA_{f.name.upper()}": f.name for f in fields(Settings) if f.name != "keymap"}


def read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None


def env_overrides(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for var, name in ENV_VARS.items():
        if env.get(var) not in (None, ""):
            out[name] = _coerce(name, env[var], var)
    return out


def load_settings(path: Path | None = None, *, env: Mapping[str, str] | None = None,
                  **cli: Any) -> Settings:
    """Defaults < file < environment < CLI (None values in ``cli`` are ignored). Raises ConfigError."""
    if path is None:
        from app.locations import locations
        path = locations().config_file
    base = Settings.from_mapping(read_file(path), origin=str(path))
    return base.merged(**env_overrides(env)).merged(**cli)


def load_settings_lenient(path: Path | None = None, *, env: Mapping[str, str] | None = None,
                          **cli: Any) -> tuple[Settings, str | None]:
    """Like :func:`load_settings` but never raises: on error, defaults (+ valid CLI flags) and the message."""
    try:
        return load_settings(path, env=env, **cli), None
    except ConfigError as exc:
        try:
            return Settings().merged(**cli), str(exc)
        except ConfigError:
            return Settings(), str(exc)


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    if path is None:
        from app.locations import locations
        path = locations().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_bytes(tomli_w.dumps(settings.to_dict()).encode())
    tmp.replace(path)
    return path
