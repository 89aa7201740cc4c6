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
        out.append(Endpoint(name, t["url"], t.get("model", ""), key, t.get("price_in", 0.0), t.get("price_out", 0.0),
                            t.get("api", "auto")))
    return out


def prices(settings: Settings, ep: Endpoint) -> Prices:
    return Prices(settings.device_price_in, settings.device_price_out, ep.price_in, ep.price_out)


def build_router(engine, settings: Settings, data_dir, env: Mapping[str, str] | None = None):
    """(router or None, one line for the user or ""): routing is on when a server is configured
    and the policy is not ``device``; the first configured server is the one routed to."""
    if not settings.servers or settings.route == "device":
        return None, ""
    from engine.routing.router import Router

    try:
        ep = endpoints(settings, env)[0]
    except ConfigError as exc:
        return None, f"device serves: {exc}"
    from pathlib import Path

    return Router(engine, ep, prices(settings, ep), budget=settings.route_budget, policy=settings.route,
                  state_path=Path(data_dir) / "routing.json"), ""
