"""``hexa serve``: the engine behind an OpenAI-compatible HTTP API on 127.0.0.1 (docs/serve.md)."""
from __future__ import annotations

import argparse
import sys
import threading

from .. import settings as config


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the model over an OpenAI-compatible HTTP API",
                       description="Serve the model on /v1/chat/completions, /v1/completions and /v1/models. "
                                   "Any address but a loopback one needs an API key in the environment "
                                   "variable named by the serve_api_key_env setting (HEXA_SERVE_API_KEY).")
    config.add_flags(p.add_argument_group("server"), config.SERVE_FLAGS, top_level=False)
    config.add_flags(p.add_argument_group("model"), config.MODEL_FLAGS, top_level=False)
    config.add_flags(p.add_argument_group("generation"), config.GENERATION_FLAGS, top_level=False)
    # the app's child mode (serve/child.py): stop when the parent closes our standard input
    p.add_argument("--parent-pipe", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_serve, uses_settings=True)


def cmd_serve(args) -> int:
    from ..loading import load_engine
    from ..serve.run import Server, api_key

    s = args.loaded.settings
    key = api_key(s)
    failed: list[str] = []
    server = None

    def loaded(error: str | None) -> None:
        if error is None:
            print(f"hexa: ready ({s.method}, queue {s.serve_queue})", file=sys.stderr, flush=True)
        else:   # nothing to serve: say why and stop
            failed.append(error)
            server.stop()

    def progress(text: str) -> None:
        print(f"hexa: loading: {text}", file=sys.stderr, flush=True)

    log_errors(args.locations.logs)
    server = Server(lambda: load_engine(s, args.locations, progress), s, key, on_load=loaded)
    if args.parent_pipe:
        threading.Thread(target=lambda: (sys.stdin.read(), server.stop()), daemon=True).start()
    # the first line tells a parent process (the app's child mode, a script) where to connect
    print(f"hexa: serving on {server.url}/v1{' (API key required)' if key else ''}", file=sys.stderr, flush=True)
    server.run()
    if failed:
        print(f"hexa: {failed[0]}", file=sys.stderr)
        return 2
    return 0


def log_errors(folder) -> None:
    """An unexpected error's traceback goes to ``errors.log`` in the log folder (the client gets
    one line), as every hexa command does."""
    import logging

    try:
        folder.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(folder / "errors.log")
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
    logger = logging.getLogger("hexa.serve")
    logger.addHandler(handler)
    logger.propagate = False     # not on the terminal as well
