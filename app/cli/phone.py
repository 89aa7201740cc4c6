"""``hexa phone``: the virtual phone — serve it over adb, print or reset its state (through the
benchmark harness's ``PhoneControl``: a real phone has no such state, and says so)."""
from __future__ import annotations

import argparse
import json
import sys
import time


def register(sub) -> None:
    p = sub.add_parser("phone", help="the virtual Android phone (an adb device on 127.0.0.1)",
                       description="A virtual Android phone that speaks the adb transport protocol: "
                                   "the UI agent, adb-shell and `adb connect` all talk to it like "
                                   "to a real phone.")
    cmds = p.add_subparsers(dest="phone_command", metavar="ACTION", required=True)
    serve = cmds.add_parser("serve", help="run the virtual phone until Ctrl+C")
    # --device, as for state, reset and the agent; --host and --port (its first spelling) still work
    serve.add_argument("--device", default=None, metavar="HOST:PORT",
                       help="address to listen on (default 127.0.0.1:5555)")
    serve.add_argument("--host", default=None, help=argparse.SUPPRESS)
    serve.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    serve.add_argument("--no-auth", action="store_true", help="accept clients without an RSA key")
    serve.add_argument("--refuse-new-keys", action="store_true",
                       help="never accept a key it has not seen (as a phone whose user taps Cancel)")
    serve.set_defaults(func=cmd_serve)
    for name, what in (("state", "print the phone's whole state as JSON"),
                       ("reset", "back to the fresh state (home screen, default settings)")):
        c = cmds.add_parser(name, help=what)
        c.add_argument("--device", default="127.0.0.1:5555", metavar="HOST:PORT",
                       help="the virtual phone's address (default 127.0.0.1:5555)")
        c.set_defaults(func=cmd_state if name == "state" else cmd_reset)


def listen_address(args) -> tuple[str, int]:
    """(host, port) from --device HOST:PORT, or from the older --host and --port."""
    host, port = "127.0.0.1", 5555
    if args.device:
        head, sep, tail = args.device.rpartition(":")
        if not sep or not tail.isdigit():
            raise OSError(f"--device {args.device}: expected HOST:PORT, e.g. 127.0.0.1:5555")
        host, port = head or host, int(tail)
    host = args.host or host
    port = args.port if args.port is not None else port
    if not 0 < port < 65536:
        raise OSError(f"port {port}: expected 1-65535")
    return host, port


def cmd_serve(args) -> int:
    from agents.phone.device.phone import VirtualPhone
    from agents.phone.adb.server import PhoneServer

    from ..locations import ensure

    host, port = listen_address(args)
    server = PhoneServer(VirtualPhone(), host=host, port=port, auth=not args.no_auth,
                         keys_file=ensure(args.locations.phone_dir) / "adb_keys",
                         accept_new_keys=not args.refuse_new_keys)
    port = server.start()
    print(f"hexa: virtual phone on {host}:{port} "
          f"({'no auth' if args.no_auth else 'RSA auth'}); Ctrl+C stops it", file=sys.stderr)
    try:
        while True:       # the server's threads do the work; Ctrl+C ends this wait
            time.sleep(3600)
    finally:
        server.stop()
    return 0


def _control(args):
    from agents.harness.control import PhoneControl
    from agents.ui.adb import AdbConnection

    return PhoneControl(AdbConnection(args.device, args.locations.adb_keys, timeout_s=5.0, auth_timeout_s=10.0))


def cmd_state(args) -> int:
    control = _control(args)
    try:
        state = control.state()      # a real phone: DeviceError, "... is not hexa's virtual phone"
    finally:
        control.conn.close()
    print(json.dumps(state, indent=2, ensure_ascii=False))
    return 0


def cmd_reset(args) -> int:
    control = _control(args)
    try:
        control.reset()
    finally:
        control.conn.close()
    print(f"hexa: {args.device} reset", file=sys.stderr)
    return 0
