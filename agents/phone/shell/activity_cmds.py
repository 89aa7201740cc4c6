"""App-level commands: ``am``, ``pm``, ``monkey`` (and ``dumpsys`` from its own module), with
the texts Android 13/14 prints, errors included.

Activity names: the device model may spell them in full ("com.x.Main") or short (".Main");
both are accepted and compared in full. ``am start`` asks the device with the full class name
first, then the short one.
"""
from __future__ import annotations

from ..device.components import full_class, short_name
from .dumpsys import dumpsys_cmd
from .cmd import Args, JavaError, NumberFormat, default_command, illegal_argument, report

ACTION_MAIN = "android.intent.action.MAIN"
CATEGORY_LAUNCHER = "android.intent.category.LAUNCHER"
CATEGORY_HOME = "android.intent.category.HOME"
FLAG_NEW_TASK = 0x10000000
AM_ON_COMMAND = "com.android.server.am.ActivityManagerShellCommand.onCommand(ActivityManagerShellCommand.java:241)"
AM_FRAMES = ("com.android.server.am.ActivityManagerService.onShellCommand(ActivityManagerService.java:9965)",
             "android.app.IActivityManager$Stub.onTransact(IActivityManager.java:2737)")
PM_ON_COMMAND = "com.android.server.pm.PackageManagerShellCommand.onCommand(PackageManagerShellCommand.java:231)"
PM_FRAMES = ("com.android.server.pm.PackageManagerService$IPackageManagerImpl.onShellCommand"
             "(PackageManagerService.java:6546)",
             "android.content.pm.IPackageManager$Stub.onTransact(IPackageManager.java:4522)")
INTENT_FRAME = ("android.content.Intent.parseCommandArgs(Intent.java:11962)",)
ONE_VALUE = {"-a", "-d", "-t", "-i", "-c", "-n", "-p", "-f", "--user", "-P", "--start-profiler", "-R",
             "--display", "--windowingMode", "--activityType", "--task", "--attach-agent",
             "--attach-agent-bind", "--sampling", "--esn", "--receiver-permission"}
TWO_VALUES = {"-e", "--es", "--ez", "--ei", "--el", "--ef", "--ed", "--eu", "--ecn", "--eia", "--eial",
              "--ela", "--elal", "--efa", "--efal", "--eda", "--edal", "--esa", "--esal"}
NO_VALUE = {"-W", "-S", "-D", "-N", "--streaming", "--track-allocation", "--task-overlay", "--lock-task",
            "--allow-background-activity-starts", "--dismiss-keyguard", "--selector",
            "--debug-log-resolution", "--exclude-stopped-packages", "--include-stopped-packages"}
AM_HELP = "Activity manager (activity) commands:\n  help\n      Print this help text.\n" \
          "  start-activity [-D] [-N] [-W] [-P <FILE>] [--start-profiler <FILE>] [-S] [--user <USER_ID> | current] <INTENT>\n" \
          "      Start an Activity.\n  force-stop [--user <USER_ID> | all | current] <PACKAGE>\n" \
          "      Completely stop the given application package.\n"
PM_HELP = "Package manager (package) commands:\n  help\n    Print this help text.\n" \
          "  path [--user USER_ID] PACKAGE\n    Print the path to the .apk of the given PACKAGE.\n" \
          "  list packages [-f] [-d] [-e] [-s] [-3] [-i] [-l] [-u] [-U] [FILTER]\n" \
          "    Prints all packages; optionally only those whose name contains the text in FILTER.\n"
SYSTEM_PREFIXES = ("com.android.", "com.google.android.", "com.qualcomm.", "com.qti.")


def is_system(package: str) -> bool:
    """The Phone protocol does not say; platform package names stand in for the system flag."""
    return package == "android" or package.startswith(SYSTEM_PREFIXES)


class Intent:
    def __init__(self):
        self.action = self.data = self.package = None
        self.categories: list[str] = []
        self.component: tuple[str, str] | None = None
        self.flags = 0
        self.extras = False
        self.wait = self.stop_first = False

    def describe(self, flags: int = 0) -> str:
        """Intent.toShortString as ``am`` prints it."""
        parts = []
        if self.action:
            parts.append(f"act={self.action}")
        if self.categories:
            parts.append("cat=[" + ",".join(self.categories) + "]")
        if self.data:
            parts.append(f"dat={self.data}")
        if self.flags | flags:
            parts.append(f"flg=0x{self.flags | flags:x}")
        if self.package:
            parts.append(f"pkg={self.package}")
        if self.component:
            parts.append("cmp=" + short_name(*self.component))
        if self.extras:
            parts.append("(has extras)")
        return "Intent { " + " ".join(parts) + " }"


def parse_intent(args: Args) -> Intent:
    intent, given = Intent(), False
    while (opt := args.option()) is not None:
        if opt in ONE_VALUE:
            value = args.required()
            given = given or opt in ("-a", "-d", "-t", "-c", "-n", "-p", "-f")
            if opt == "-a":
                intent.action = value
            elif opt == "-c":
                intent.categories.append(value)
            elif opt == "-d":
                intent.data = value
            elif opt == "-p":
                intent.package = value
            elif opt == "-f":
                try:
                    intent.flags = int(value, 0)
                except ValueError:
                    raise NumberFormat(value) from None
            elif opt == "-n":
                intent.component = unflatten(value)
        elif opt in TWO_VALUES:
            args.required(), args.required()
            intent.extras = given = True
        elif opt in NO_VALUE or opt.startswith(("--activity-", "--receiver-", "--grant-")):
            intent.wait = intent.wait or opt == "-W"
            intent.stop_first = intent.stop_first or opt == "-S"
        else:
            raise illegal_argument(f"Unknown option: {opt}", INTENT_FRAME)
    target = args.next()
    if target is not None:
        given = True
        if ":" in target:
            intent.data = target
        else:
            intent.action, intent.categories = ACTION_MAIN, [CATEGORY_LAUNCHER]
            if "/" in target:
                intent.component = unflatten(target)
            else:
                intent.package = target
    if not given:
        raise illegal_argument("No intent supplied", INTENT_FRAME)
    return intent


def unflatten(text: str) -> tuple[str, str]:
    package, _, cls = text.partition("/")
    if not package or not cls:
        raise illegal_argument(f"Bad component name: {text}", INTENT_FRAME)
    return package, full_class(package, cls)


def focused(phone) -> tuple[str, str]:
    package, activity = phone.focus()
    return package, full_class(package, activity or "")


def force_stop(phone, package: str) -> None:
    stop = getattr(phone, "force_stop", None)   # optional in the Phone protocol
    if stop is not None:
        stop(package)
    elif phone.focus()[0] == package:
        phone.key("KEYCODE_HOME")               # the app leaves the screen


def start_activity(sh, args: Args, io) -> int:
    phone, intent = sh.phone, parse_intent(args)
    if intent.stop_first and (intent.component or intent.package):
        force_stop(phone, (intent.component or (intent.package,))[0])
    io.out.write(f"Starting: {intent.describe()}\n")
    if intent.component:
        package, cls = intent.component
        if focused(phone) == (package, cls):
            io.out.write("Warning: Activity not started, intent has been delivered to currently "
                         "running top-most instance.\n")
            launched = True
        else:
            short = short_name(package, cls).split("/", 1)[1]
            launched = phone.launch(package, cls) or (short != cls and phone.launch(package, short))
        if not launched:
            io.err.write(f"Error type 3\nError: Activity class {{{package}/{cls}}} does not exist.\n")
            return 1
    elif intent.package and intent.action in (None, ACTION_MAIN) and phone.launcher_activity(intent.package):
        phone.launch(intent.package, None)
    elif intent.action == ACTION_MAIN and CATEGORY_HOME in intent.categories:
        phone.key("KEYCODE_HOME")
    else:
        io.err.write(f"Error: Activity not started, unable to resolve {intent.describe(FLAG_NEW_TASK)}\n")
        return 1
    if intent.wait:
        package, cls = focused(phone)
        io.out.write(f"Status: ok\nLaunchState: COLD\nActivity: {short_name(package, cls)}\n"
                     "TotalTime: 312\nWaitTime: 318\nComplete\n")
    return 0


def am_cmd(sh, argv, io, ctx) -> int:
    args = Args(argv[1:], AM_ON_COMMAND)
    sub = args.command
    try:
        if sub in ("start", "start-activity"):
            return start_activity(sh, args, io)
        if sub in ("force-stop", "stop-app", "kill"):
            while (opt := args.option()) is not None:
                if opt == "--user":
                    args.required()
            package = args.required()
            if sub != "kill":
                force_stop(sh.phone, package)
            return 0
        return default_command(io, sub, AM_HELP)
    except JavaError as error:
        return report(io, sub, error, AM_FRAMES)


def pm_cmd(sh, argv, io, ctx) -> int:
    args = Args(argv[1:], PM_ON_COMMAND)
    sub = args.command
    try:
        if sub == "list":
            kind = args.next()
            if kind is None:
                io.err.write("Error: didn't specify type of data to list\n")
                return 255
            if kind not in ("packages", "package"):
                io.err.write(f"Error: unknown list type '{kind}'\n")
                return 255
            return list_packages(sh.phone, args, io)
        if sub == "path":
            package = args.required()
            if package not in sh.phone.packages():
                return 1
            io.out.write(f"package:{apk_path(package)}\n")
            return 0
        return default_command(io, sub, PM_HELP)
    except JavaError as error:
        return report(io, sub, error, PM_FRAMES)


def apk_path(package: str) -> str:
    if is_system(package):
        name = package.rsplit(".", 1)[-1].capitalize()
        return f"/system/priv-app/{name}/{name}.apk"
    return f"/data/app/~~hexa{len(package)}==/{package}-1/base.apk"


def list_packages(phone, args: Args, io) -> int:
    flags = set()
    while (opt := args.option()) is not None:
        if opt == "--user":
            args.required()
        elif opt in ("-f", "-d", "-e", "-s", "-3", "-i", "-l", "-u", "-U", "-a", "--show-versioncode"):
            flags.add(opt)
        else:
            io.err.write(f"Error: Unknown option: {opt}\n")
            return 255
    needle = args.next() or ""
    for package in sorted(phone.packages()):
        if needle not in package or "-d" in flags:
            continue
        if ("-s" in flags and not is_system(package)) or ("-3" in flags and is_system(package)):
            continue
        line = f"package:{apk_path(package)}={package}" if "-f" in flags else f"package:{package}"
        if "--show-versioncode" in flags:
            line += " versionCode:1"
        if "-U" in flags:
            line += f" uid:{10100 + sum(map(ord, package)) % 900}"
        io.out.write(line + "\n")
    return 0


def monkey_cmd(sh, argv, io, ctx) -> int:
    """Only the launch idiom (-p PKG [-c CATEGORY] COUNT) does anything: random events would
    wreck the task under test, so COUNT is reported but not injected."""
    args = argv[1:]
    io.out.write("".join(f"  bash arg: {a}\n" for a in args))   # the monkey wrapper script
    io.err.write("args: [" + ", ".join(args) + "]\n" + "".join(f' arg: "{a}"\n' for a in args))
    packages, count, i = [], None, 0
    while i < len(args):
        a = args[i]
        if a in ("-p", "-c", "-s", "--throttle", "--seed") or a.startswith("--pct-"):
            if i + 1 < len(args):
                io.err.write(f'data="{args[i + 1]}"\n')
                if a == "-p":
                    packages.append(args[i + 1])
            i += 2
            continue
        if not a.startswith("-"):
            count = a
        i += 1
    if count is None or not count.isdigit():
        io.err.write("** Error: Count not specified\n" if count is None else f"** Error: Invalid count {count}\n")
        io.err.write("usage: monkey [-p ALLOWED_PACKAGE [-p ALLOWED_PACKAGE] ...] [-c MAIN_CATEGORY] COUNT\n")
        return 1
    target = next((p for p in packages if sh.phone.launcher_activity(p)), None)
    if target is None:
        io.out.write("** No activities found to run, monkey aborted.\n")
        return 251
    if int(count) > 0:
        sh.phone.launch(target, None)
    io.out.write(f"Events injected: {count}\n## Network stats: elapsed time=14ms "
                 "(0ms mobile, 0ms wifi, 14ms not connected)\n")
    return 0


def cmd_cmd(sh, argv, io, ctx) -> int:
    """``cmd activity …`` / ``cmd package …`` / ``cmd input …`` are the same services."""
    services = {"activity": am_cmd, "package": pm_cmd, "input": sh.commands["input"],
                "window": sh.commands["wm"]}
    if len(argv) < 2 or argv[1] not in services:
        io.err.write(f"cmd: Can't find service: {argv[1] if len(argv) > 1 else ''}\n")
        return 20
    return services[argv[1]](sh, argv[1:], io, ctx)


COMMANDS = {"am": am_cmd, "pm": pm_cmd, "monkey": monkey_cmd, "dumpsys": dumpsys_cmd, "cmd": cmd_cmd}
