"""The app's side of routing: the configured endpoints (API keys read from the environment
variables the user names: the key itself is never written in config.toml) and their prices."""
from __future__ import annotations

import os
from typing import Mapping

from engine.routing.client import Endpoint
from engine.routing.models import Prices

from .settings import ConfigError, Settings


def endpoints(settings: Settings, env: Mapping[str, str] | None = None) -> list[Endpoint]:
    env = os.environ if env is None else env
    out = []
    for name, t in settings.servers.items():
        key = ""
        if t.get("api_key_env"):
            key = env.get(t["api_key_env"], "")
            if not key:
                raise ConfigError(f"[servers.{name}]: api_key_env names {t['api_key_env']}, which is not set")
        out.append(Endpoint(name, t["url"], t.get("model", ""), key, t.get("price_in", 0.0), t.get("price_out", 0.0)))
    return out


def prices(settings: Settings, ep: Endpoint) -> Prices:
    return Prices(settings.device_price_in, settings.device_price_out, ep.price_in, ep.price_out)
