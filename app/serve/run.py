"""Starting the server: the API key rule, the listening socket, uvicorn.

The socket is bound here, before uvicorn starts, so that a port in use or an address that does not
exist is one line and exit 2 (uvicorn itself logs and exits 1), and so that port 0 works: the port
the system chose is known before the first request.
"""
from __future__ import annotations

import ipaddress
import os
import socket
from typing import Any, Callable, Mapping

import uvicorn

from app.settings import ConfigError

from .server import create_app


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:   # a name: it may resolve to anything
        return False


def api_key(settings: Any, env: Mapping[str, str] | None = None) -> str | None:
    """The key clients must send (None: none needed), from the environment variable the settings
    name; ConfigError for a non-loopback address without one."""
    env = os.environ if env is None else env
    key = env.get(settings.serve_api_key_env, "").strip() or None
    if key is None and not is_loopback(settings.serve_host):
        raise ConfigError(f"{settings.serve_host} is not a loopback address: set an API key in "
                          f"${settings.serve_api_key_env} first (clients send it as a bearer token)")
    return key


def bind(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


class Server:
    """A bound socket and the uvicorn server for it; ``run()`` blocks, ``stop()`` from any thread."""

    def __init__(self, load: Callable[[], Any], settings: Any, key: str | None,
                 on_load: Callable[[str | None], None] | None = None, on_internal=None):
        self.sock = bind(settings.serve_host, settings.serve_port)
        self.host, self.port = settings.serve_host, self.sock.getsockname()[1]

        def loaded(error: str | None) -> None:
            if on_load is not None:
                on_load(error)

        self.app = create_app(load, settings, key, on_load=loaded, on_internal=on_internal)
        # no access log: a line per request costs the engine's thread the GIL for nothing
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=2)
        self.uvicorn = uvicorn.Server(config)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def run(self) -> None:
        try:
            self.uvicorn.run(sockets=[self.sock])
        finally:
            self.sock.close()

    def stop(self) -> None:
        self.uvicorn.should_exit = True
