"""The commands that reach the device model: ``input``, ``uiautomator``, ``getprop``, ``wm``
and the virtual phone's own ``hexa-phone``. Texts and failures are those of Android 13/14.

``input text`` and non-ASCII: Android maps each character through the virtual keyboard's key
character map (KeyCharacterMap.getEvents); a character it cannot type (anything outside printable
ASCII, tab and newline) makes getEvents return null, sendText throws a NullPointerException and
nothing at all is typed. We do the same, so an agent must not rely on ``input text`` for Unicode.
"""
from __future__ import annotations

import json
import math
import posixpath
import time

from .. import NotIdle
from ..device.keycodes import keycode_from_string
from .cmd import Args, JavaError, NumberFormat, default_command, illegal_argument, java_float, java_int, report

INPUT_ON_COMMAND = "com.android.server.input.InputShellCommand.onCommand(InputShellCommand.java:288)"
INPUT_FRAMES = ("com.android.server.input.InputManagerService.onShellCommand(InputManagerService.java:2782)",
                "android.hardware.input.IInputManager$Stub.onTransact(IInputManager.java:1267)")
SOURCES = ("keyboard", "dpad", "gamepad", "touchscreen", "mouse", "stylus", "trackball", "touchpad",
           "touchnavigation", "joystick", "rotaryencoder")
INPUT_HELP = "".join(line + "\n" for line in [
    "Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]", "", "The sources are: ",
    *("      " + s for s in SOURCES), "",
    "-d: specify the display ID.", "      (Default: -1 for key event, 0 for motion event if not specified.)",
    "The commands and default sources are:",
    "      text <string> (Default: keyboard)",
    "      keyevent [--longpress|--doubletap|--async|--delay <duration between keycodes in ms>]"
    " <key code number or name> ... (Default: keyboard)",
    "      tap <x> <y> (Default: touchscreen)",
    "      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)",
    "      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)",
    "      press (Default: trackball)",
    "      roll <dx> <dy> (Default: trackball)",
    "      motionevent <DOWN|UP|MOVE|CANCEL> <x> <y> (Default: touchscreen)",
    "      keycombination [-t duration(ms)] <key code 1> <key code 2> ..."
    " (Default: keyboard, the key order is important here.)"])
LONG_PRESS_MS = 500
DUMP_DEFAULT = "/sdcard/window_dump.xml"
UIAUTOMATOR_HELP = """Usage: uiautomator <subcommand> [options]

Available subcommands:

help: displays help message

runtest: executes UI automation tests
    runtest <class spec> [options]

dump: creates an XML dump of current UI hierarchy
    dump [--verbose][file]
      [--compressed]: dumps compressed layout information.
      [file]: the location where the dumped XML should be stored, default is
      /sdcard/window_dump.xml

events: prints out accessibility events until terminated
"""
WM_HELP = """Window manager (window) commands:
  help
      Print this help text.
  size [reset|WxH|WdpxHdp] [-d DISPLAY_ID]
    Return or override display size.
    width and height in pixels unless suffixed with 'dp'.
  density [reset|DENSITY] [-d DISPLAY_ID]
    Return or override display density.
"""


def _point(value: float) -> int | None:
    return int(value) if math.isfinite(value) else None


def _typeable(ch: str) -> bool:
    return " " <= ch <= "~" or ch in "\n\t"


def _percent_s(text: str) -> str:
    """sendText's escape: "%s" becomes a space (a "%" is kept otherwise)."""
    out, escape = [], False
    for ch in text:
        if escape:
            escape = False
            if ch == "s":
                out[-1] = " "
                continue
        out.append(ch)
        escape = ch == "%"
    return "".join(out)


def input_cmd(sh, argv, io, ctx) -> int:
    args = Args(argv[1:], INPUT_ON_COMMAND)
    arg = args.command
    try:
        if arg in SOURCES:
            arg = args.required()
        if arg == "-d":
            display = args.required()
            if display.upper() not in ("INVALID_DISPLAY", "DEFAULT_DISPLAY"):
                try:
                    java_int(display)
                except NumberFormat:
                    raise illegal_argument("Error: Invalid arguments for display ID.") from None
            arg = args.required()
        try:
            return _input(sh, arg, args, io)
        except NumberFormat:
            raise illegal_argument(f"Error: Invalid arguments for command: {arg}",
                                   (INPUT_ON_COMMAND,)) from None
    except JavaError as error:
        return report(io, args.command, error, INPUT_FRAMES)


def _input(sh, arg, args: Args, io) -> int:
    phone = sh.phone
    if arg == "text":
        text = _percent_s(args.required())
        if not all(_typeable(ch) for ch in text):
            raise JavaError("java.lang.NullPointerException", "Attempt to get length of null array",
                            ("com.android.server.input.InputShellCommand.sendText(InputShellCommand.java:412)",
                             "com.android.server.input.InputShellCommand.runText(InputShellCommand.java:385)",
                             "com.android.server.input.InputShellCommand.onCommand(InputShellCommand.java:261)"))
        phone.type_text(text)
    elif arg == "keyevent":
        _keyevent(phone, args)
    elif arg == "tap":
        x, y = _point(java_float(args.required())), _point(java_float(args.required()))
        if x is not None and y is not None:
            phone.tap(x, y)
    elif arg in ("swipe", "draganddrop"):
        coords = [_point(java_float(args.required())) for _ in range(4)]
        duration = args.next()
        ms = java_int(duration) if duration is not None else -1
        ms = 300 if ms < 0 else ms
        if None in coords:
            return 0
        x1, y1, x2, y2 = coords
        if (x1, y1) == (x2, y2) and ms >= LONG_PRESS_MS:
            phone.long_press(x1, y1)
        else:
            phone.swipe(x1, y1, x2, y2, ms)
    elif arg == "press":
        pass                                  # a trackball click: nothing on a touch phone
    elif arg == "roll":                       # a trackball move: only its arguments are checked
        java_float(args.required())
        java_float(args.required())
    elif arg == "motionevent":
        _motionevent(sh, args)
    elif arg == "keycombination":
        first = args.required()
        if first == "-t":
            java_int(args.required())
            first = args.required()
        keys, name = [], first
        while name is not None:
            code = keycode_from_string(name)
            if code is None:
                raise illegal_argument(f"Unknown keycode: {name}")
            keys.append(code)
            name = args.next()
        if len(keys) < 2:
            raise illegal_argument("keycombination requires at least 2 keycodes")
        for code in keys:   # the device model has no modifier state: the keys in order
            phone.key(code)
    else:
        default_command(io, arg, INPUT_HELP)
    return 0


def _keyevent(phone, args: Args) -> None:
    name = args.required()
    repeat = 1
    while name is not None and name.startswith("--"):
        if name == "--doubletap":
            repeat = 2
        elif name == "--delay":
            java_int(args.required())
        name = args.next()
    while name is not None:
        code = keycode_from_string(name)
        for _ in range(repeat if code else 0):   # KEYCODE_UNKNOWN is sent and does nothing
            phone.key(code)
        name = args.next()


def _motionevent(sh, args: Args) -> None:
    """DOWN x y … UP x y is a tap (or a long press / swipe, by time and distance)."""
    action = args.required().upper()
    if action not in ("DOWN", "UP", "MOVE", "CANCEL"):
        raise illegal_argument(f"Unknown action: {action}")
    if action == "CANCEL":
        sh.touch = None
        return
    x, y = _point(java_float(args.required())), _point(java_float(args.required()))
    if action == "DOWN":
        sh.touch = (x, y, time.monotonic())
    elif action == "UP" and sh.touch and None not in (x, y):
        x0, y0, t0 = sh.touch
        sh.touch = None
        ms = int((time.monotonic() - t0) * 1000)
        if abs(x - x0) + abs(y - y0) < 10:
            (sh.phone.long_press if ms >= LONG_PRESS_MS else sh.phone.tap)(x0, y0)
        else:
            sh.phone.swipe(x0, y0, x, y, max(ms, 1))


def uiautomator_cmd(sh, argv, io, ctx) -> int:
    if len(argv) < 2 or argv[1] != "dump":
        io.out.write(UIAUTOMATOR_HELP)
        return 0
    target = DUMP_DEFAULT
    for arg in argv[2:]:
        if not arg.startswith("-"):       # like DumpCommand: unknown flags are ignored
            target = arg
    shown = posixpath.join(ctx.cwd, target)   # File.getAbsolutePath(): joined, not normalised
    try:
        if sh.busy_dumps > 0:
            sh.busy_dumps -= 1
            raise NotIdle()
        xml = sh.phone.dump_ui()
    except NotIdle:
        io.err.write("ERROR: could not get idle state.\n")
        return 0
    path = sh.fs.resolve(target, ctx.cwd)
    if path in ("/dev/tty", "/dev/stdout"):
        io.out.write(xml)            # no newline: the message follows on the same line, as on a phone
    elif sh.fs.writable(path) and not sh.fs.is_dir(path):
        sh.fs.write(path, xml)
    io.out.write(f"UI hierchary dumped to: {shown}\n")   # sic: the phone's own spelling
    return 0


def getprop_cmd(sh, argv, io, ctx) -> int:
    props = sh.phone.properties()
    if len(argv) == 1:
        io.out.write("".join(f"[{k}]: [{props[k]}]\n" for k in sorted(props)))
    else:
        io.out.write(props.get(argv[1], argv[2] if len(argv) > 2 else "") + "\n")
    return 0


def wm_cmd(sh, argv, io, ctx) -> int:
    args = argv[1:]
    if not args or args[0] not in ("size", "density"):
        return default_command(io, args[0] if args else None, WM_HELP)
    value = args[1] if len(args) > 1 else None
    if args[0] == "size":
        width, height = sh.phone.screen_size()
        if value is None:
            io.out.write(f"Physical size: {width}x{height}\n")
            if sh.size_override and sh.size_override != (width, height):
                io.out.write("Override size: %dx%d\n" % sh.size_override)
        elif value == "reset":
            sh.size_override = None
        else:
            w, sep, h = value.partition("x")
            if not (w and sep and h):
                io.err.write(f"Error: bad size {value}\n")
                return 255
            bad = next((part for part in (w, h) if not part.isdigit()), None)
            if bad is not None:
                io.err.write(f'Error: bad number java.lang.NumberFormatException: For input string: "{bad}"\n')
                return 255
            sh.size_override = (int(w), int(h))
        return 0
    physical = int(sh.phone.properties().get("ro.sf.lcd_density", "420"))
    if value is None:
        io.out.write(f"Physical density: {physical}\n")
        if sh.density_override and sh.density_override != physical:
            io.out.write(f"Override density: {sh.density_override}\n")
    elif value == "reset":
        sh.density_override = None
    elif value.isdigit() and int(value) > 0:
        sh.density_override = int(value)
    else:
        io.err.write(f'Error: bad number java.lang.NumberFormatException: For input string: "{value}"\n')
        return 255
    return 0


def hexa_phone_cmd(sh, argv, io, ctx) -> int:
    """The virtual phone's own commands, for hexa's tools and tests (no real phone has them)."""
    sub = argv[1] if len(argv) > 1 else ""
    if sub == "state" and len(argv) == 2:
        io.out.write(json.dumps(sh.phone.state()) + "\n")
    elif sub == "reset" and len(argv) in (2, 3):
        # a task's start state: `hexa-phone reset '{"settings.bluetooth": false}'`
        try:
            setup = json.loads(argv[2]) if len(argv) == 3 else None
        except ValueError:
            setup = "bad"
        if setup is not None and not isinstance(setup, dict):
            io.err.write("hexa-phone: reset takes a JSON object of path -> value\n")
            return 1
        sh.phone.reset(setup)
        sh.reset()
    elif sub == "busy" and len(argv) == 3 and argv[2].isdigit():
        sh.busy_dumps = int(argv[2])
    else:
        io.err.write("usage: hexa-phone state | reset [JSON] | busy N\n")
        return 1
    return 0


COMMANDS = {"input": input_cmd, "uiautomator": uiautomator_cmd, "getprop": getprop_cmd,
            "wm": wm_cmd, "hexa-phone": hexa_phone_cmd}
