"""Where hexa keeps its files: platformdirs folders, each overridable by an environment variable."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from platformdirs import PlatformDirs

_DIRS = PlatformDirs("hexa", appauthor=False)

# (name, environment override, platformdirs default)
_SPEC = (
    ("config", "HEXA_CONFIG_DIR", _DIRS.user_config_dir),
    ("data", "HEXA_DATA_DIR", _DIRS.user_data_dir),
    ("cache", "HEXA_CACHE_DIR", _DIRS.user_cache_dir),
    ("logs", "HEXA_LOG_DIR", _DIRS.user_log_dir),
)


@dataclass(frozen=True)
class Locations:
    config: Path
    data: Path
    cache: Path
    logs: Path

    @property
    def config_file(self) -> Path:
        return self.config / "config.toml"

    @property
    def adb_keys(self) -> Path:
        """hexa's adb key pair (the phone asks its user to accept it once)."""
        return self.config / "adb"

    @property
    def phone_dir(self) -> Path:
        """The virtual phone's files (the keys it accepted)."""
        return self.data / "phone"

    @property
    def model_cache(self) -> Path:
        return self.cache / "models"

    def items(self) -> list[tuple[str, Path]]:
        return [(name, getattr(self, name)) for name, _, _ in _SPEC]


def locations() -> Locations:
    """Resolve every folder now (environment overrides are read at call time)."""
    return Locations(**{name: Path(os.environ.get(env) or default).expanduser()
                        for name, env, default in _SPEC})


def ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
