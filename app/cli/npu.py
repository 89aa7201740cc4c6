"""``hexa npu``: the qnn backend's graphs on real Snapdragon NPUs, through Qualcomm AI Hub.

``devices`` lists AI Hub's hosted devices with a Snapdragon NPU; ``compile --device NAME`` compiles
the block graphs for one and links each block's graphs into a weight-shared context binary
(downloaded into the cache); ``profile --device NAME`` times each graph on that device and stores a
device cost profile for ``--cost-profile NAME``. The work is in ``engine.runtime.qnn.hub``.

AI Hub needs the user's API token. Before anything calls qai_hub, ``hub_login`` reads qai_hub's
configuration file and checks that its API host answers (a connection and a TLS handshake, through
the proxy requests would use, within a short timeout): without a token or a network the user gets
one line within 2 seconds, where qai_hub itself would retry for ~47 s. This module stays light (no
qai_hub, torch or onnx import before that check). The TUI never calls AI Hub.
"""
from __future__ import annotations

import base64
import configparser
import os
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import getproxies, proxy_bypass

from .. import settings as config
from ..locations import ensure

# what qai_hub.api_utils.get_config_path and qai_hub.public_rest_api read (checked by the tests);
# importing qai_hub to ask takes a second of the two
CONFIG_ENV = "QAIHUB_CLIENT_INI"
DEFAULT_CONFIG = "~/.qai_hub/client.ini"
DEFAULT_API_URL = "https://workbench.aihub.qualcomm.com"
CONNECT_TIMEOUT = 1.5      # seconds for the name lookup, the connection and the TLS handshake
CONFIGURE = "qai-hub configure --api_token YOUR_TOKEN"


@dataclass(frozen=True)
class HubLogin:
    ini: Path
    api_token: str
    api_url: str
    web_url: str
    project: str | None = None


def register(sub) -> None:
    npu = sub.add_parser("npu", help="compile and profile the qnn graphs on Qualcomm AI Hub's Snapdragon devices",
                         description="Real Snapdragon NPUs through Qualcomm AI Hub (needs an API token: "
                                     f"`{CONFIGURE}`).")
    actions = npu.add_subparsers(dest="npu_action", metavar="ACTION", required=True)
    devices = actions.add_parser("devices", help="AI Hub's devices with a Snapdragon NPU")
    devices.set_defaults(func=cmd_devices)
    compile_ = actions.add_parser(
        "compile", help="compile the qnn block graphs for a device into weight-shared context binaries",
        description="Export the qnn backend's block graphs (every S, the --context in use), compile them on "
                    "AI Hub for DEVICE and link each block's graphs into one context binary sharing one copy "
                    "of its weights; the binaries are downloaded into the cache.")
    profile = actions.add_parser(
        "profile", help="time every compiled graph on the device: a device cost profile for --cost-profile",
        description="Run each graph compiled by `hexa npu compile` in a profiling job on DEVICE and store "
                    "its compute and load times as a device cost profile (use it with --cost-profile DEVICE).")
    for p in (compile_, profile):
        p.add_argument("--device", required=True, metavar="NAME",
                       help='an AI Hub device name, e.g. "Samsung Galaxy S24" (see hexa npu devices)')
        config.add_flags(p.add_argument_group("model"), ("model", "context"), top_level=False)
    build = actions.add_parser(
        "build", help="build weight-shared context binaries for a Snapdragon SoC on this machine (no AI Hub)",
        description="Compile the qnn block graphs for the SoC named by --soc with the QNN SDK in onnxruntime-qnn, "
                    "one context binary per block holding all its graphs over one copy of the weights, into "
                    "the cache folder the qnn backend on that SoC reads (copy it to the device's cache). "
                    "The HTP emulator cannot load these: on x86 the qnn backend keeps its separate binaries.")
    config.add_flags(build.add_argument_group("model"), ("model", "context", "soc"), top_level=False)
    build.set_defaults(func=cmd_build, uses_settings=True)
    compile_.add_argument("--force", action="store_true", help="compile again even if the binaries are there")
    compile_.set_defaults(func=cmd_compile, uses_settings=True)
    profile.set_defaults(func=cmd_profile, uses_settings=True)


def say(message: str) -> None:
    print(message, flush=True)


def cmd_devices(args) -> int:
    hub, client = _hub(hub_login())
    devices = hub.list_devices(client)
    for d in devices:
        print(d.line())
    if not devices:
        print("hexa: AI Hub lists no device with a Snapdragon NPU", file=sys.stderr)
    return 0


def cmd_compile(args) -> int:
    hub, client = _hub(hub_login())
    s = args.loaded.settings
    hub.compile_for_device(client, args.device, s.model, s.context, ensure(args.locations.cache), say,
                           force=args.force)
    return 0


def cmd_profile(args) -> int:
    hub, client = _hub(hub_login())
    s = args.loaded.settings
    hub.profile_device(client, args.device, s.model, s.context, ensure(args.locations.cache), say)
    return 0


def cmd_build(args) -> int:
    from engine.errors import EngineError
    from engine.methods import DEFAULT_CONTEXT
    from engine.runtime.qnn.hub import load_cpu_model
    from engine.runtime.qnn.runtime import write_shared_binaries
    from engine.runtime.qnn.shared import resolve_soc

    s = args.loaded.settings
    if not s.soc:
        raise EngineError("name the Snapdragon to build for with --soc (a QNN SoC id or part number, e.g. 69 or SM8750)")
    resolve_soc(s.soc)                       # a bad value fails here, before the model loads
    cache = ensure(args.locations.cache)
    cpu, name = load_cpu_model(s.model, cache, say)
    context = min(cpu.config.max_positions, s.context or DEFAULT_CONTEXT["qnn"])
    for path in write_shared_binaries(cpu, cache, name, context, s.soc, progress=say):
        print(path)
    return 0


def _hub(login: HubLogin):
    """(engine.runtime.qnn.hub, a client): imported only once the login is known good (torch, onnx, qai_hub)."""
    from engine.runtime.qnn import hub

    return hub, hub.make_client(login.api_token, login.api_url, login.web_url, login.project)


def hub_login(timeout: float = CONNECT_TIMEOUT) -> HubLogin:
    """qai_hub's configuration, checked, and its API host answering; else one line on what to do."""
    from engine.errors import EngineError

    named = os.environ.get(CONFIG_ENV)
    ini = Path(os.path.expanduser(named or DEFAULT_CONFIG))
    how = (f"run `{CONFIGURE}` (the token is on AI Hub's Settings page, https://aihub.qualcomm.com)"
           + (f"; {CONFIG_ENV} points to {ini}" if named else ""))
    if not ini.is_file():
        raise EngineError(f"Qualcomm AI Hub is not configured ({ini} does not exist): {how}")
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(ini, encoding="utf-8") as f:
            parser.read_file(f)
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise EngineError(f"cannot read {ini} ({exc.__class__.__name__}): {how}") from None
    api = parser["api"] if parser.has_section("api") else {}
    token = (api.get("api_token") or "").strip()
    if not token:
        raise EngineError(f"Qualcomm AI Hub is not configured ({ini} has no api_token): {how}")
    api_url = (api.get("api_url") or "").strip() or DEFAULT_API_URL
    _check_reachable(api_url, ini, timeout)
    return HubLogin(ini, token, api_url, (api.get("web_url") or "").strip() or api_url,
                    (api.get("default_project") or "").strip() or None)


def _check_reachable(api_url: str, ini: Path, timeout: float) -> None:
    """The API host answering: a TCP connection and, for https, a TLS handshake with its
    certificate checked (networks with a captive portal or a filter accept any connection), through
    the proxy requests would use."""
    from engine.errors import EngineError

    url = urlparse(api_url)
    try:
        host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        host = None
    if url.scheme not in ("http", "https") or not host:
        raise EngineError(f"api_url {api_url!r} in {ini} is not an http(s) address (`{CONFIGURE}` writes a good one)")
    proxy = getproxies().get(url.scheme)
    proxy_url = urlparse(proxy if "://" in proxy else f"http://{proxy}") if proxy and not proxy_bypass(host) else None
    try:
        via = f" through the proxy {proxy_url.hostname}:{proxy_url.port or 80}" if proxy_url else ""
    except ValueError:
        raise EngineError(f"the {url.scheme} proxy {proxy!r} is not a valid address") from None
    outcome: list[str | None] = []
    # on a daemon thread: a name lookup is not bounded by the socket timeout and may hang longer
    probe = threading.Thread(target=lambda: outcome.append(_probe(host, port, url.scheme == "https", proxy_url,
                                                                   timeout)), name="hexa-hub-probe", daemon=True)
    probe.start()
    probe.join(timeout)
    problem = outcome[0] if outcome else "no answer"
    if problem:
        raise EngineError(f"cannot reach Qualcomm AI Hub at {host}:{port}{via} ({problem}): check the network "
                          f"connection (the address is api_url in {ini})")


def _probe(host: str, port: int, tls: bool, proxy, timeout: float) -> str | None:
    """None if ``host:port`` answers (through ``proxy``, a parsed URL) within ``timeout``, else why not."""
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(0.01, deadline - time.monotonic())

    try:
        if proxy is None:
            sock = socket.create_connection((host, port), timeout=left())
        else:
            sock = socket.create_connection((proxy.hostname, proxy.port or 80), timeout=left())
            if tls:      # what requests does for https: a CONNECT tunnel
                auth = ""
                if proxy.username:
                    creds = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}".encode()
                    auth = f"Proxy-Authorization: Basic {base64.b64encode(creds).decode()}\r\n"
                sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode())
                reply = b""
                while b"\r\n\r\n" not in reply:
                    sock.settimeout(left())
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    reply += chunk
                status = reply.split(b"\r\n", 1)[0].decode("latin-1").strip()
                if status.split(" ")[1:2] != ["200"]:
                    sock.close()
                    return f"the proxy answered {status!r}" if status else "the proxy closed the connection"
        with sock:
            if tls:      # verified as requests will: a captive portal or another host fails here, not in 47 s
                sock.settimeout(left())
                _tls_context().wrap_socket(sock, server_hostname=host).close()
    except socket.gaierror:
        return "the name does not resolve"
    except TimeoutError:
        return "no answer"
    except ssl.SSLCertVerificationError as exc:
        return f"the certificate there is not valid for it: {exc.verify_message or exc.reason}"
    except ssl.SSLError as exc:
        return f"no TLS answer: {exc.reason or exc}"
    except OSError as exc:
        return (exc.strerror or str(exc) or exc.__class__.__name__).lower()
    return None


def _tls_context() -> ssl.SSLContext:
    """The certificates requests trusts: its environment overrides, else certifi's bundle."""
    cafile = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if not cafile:
        try:
            import certifi

            cafile = certifi.where()
        except ImportError:
            cafile = None
    return ssl.create_default_context(cafile=cafile)
