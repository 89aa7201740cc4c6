"""``dumpsys window`` and ``dumpsys activity``: an abridged Android 13 dump around the lines
agents grep for (mCurrentFocus, mFocusedApp, mResumedActivity, topResumedActivity)."""
from __future__ import annotations

import zlib

from ..device.components import full_class, short_name

SERVICES = ("activity", "input", "package", "power", "window")


def _hash(text: str) -> str:
    """A stable stand-in for the identity hash a real dump shows (7 hex digits)."""
    return f"{zlib.crc32(text.encode()) & 0xFFFFFFF:07x}"


def _names(phone) -> tuple[str, str, str, int]:
    """(package, full class, short component, task id) of the window in front."""
    package, activity = phone.focus()
    cls = full_class(package, activity or "")
    return package, cls, short_name(package, cls), 10 + zlib.crc32(package.encode()) % 90


def focus_lines(phone) -> str:
    package, cls, short, task = _names(phone)
    return (f"  mCurrentFocus=Window{{{_hash(package + cls)} u0 {package}/{cls}}}\n"
            f"  mFocusedApp=ActivityRecord{{{_hash(short)} u0 {short} t{task}}}\n")


def window_dump(phone, section: str | None) -> str:
    width, height = phone.screen_size()
    density = phone.properties().get("ro.sf.lcd_density", "420")
    package, cls, _, task = _names(phone)
    window = f"Window{{{_hash(package + cls)} u0 {package}/{cls}}}"
    windows = (
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
        f"  Window #0 Window{{{_hash('nav')} u0 NavigationBar0}}:\n"
        "    mDisplayId=0 rootTaskId=1 mSession=Session{8f3a2c1 1523:u0a10153} mClient=android.os.BinderProxy@3c1d2e4\n"
        "    mOwnerUid=10153 showForAllUsers=true package=com.android.systemui appop=NONE\n"
        f"  Window #1 Window{{{_hash('status')} u0 StatusBar}}:\n"
        "    mDisplayId=0 rootTaskId=1 mSession=Session{8f3a2c1 1523:u0a10153} mClient=android.os.BinderProxy@5e6f7a8\n"
        "    mOwnerUid=10153 showForAllUsers=true package=com.android.systemui appop=NONE\n"
        f"  Window #2 {window}:\n"
        f"    mDisplayId=0 rootTaskId={task} mSession=Session{{{_hash(package)} 4242:u0a10123}}\n"
        f"    mOwnerUid=10123 showForAllUsers=false package={package} appop=NONE\n"
        "    mAttrs={(0,0)(fillxfill) sim={adjust=pan forwardNavigation} ty=BASE_APPLICATION fmt=TRANSPARENT}\n"
        f"    mHasSurface=true isReadyForDisplay()=true mWindowRemovalAllowed=false\n"
        f"    Frames: parent=[0,0][{width},{height}] display=[0,0][{width},{height}]\n"
        f"    mViewVisibility=0x0 mHaveFrame=true mObscured=false\n\n"
        f"  mGlobalConfiguration={{1.0 ?mcc?mnc [en_US] ldltr {density}dpi nrml long port finger -keyb/v/h -nav/h}}\n"
        "  mHasPermanentDpad=false\n  mTopFocusedDisplayId=0\n"
        # the focus lines once per dump, so `dumpsys window | grep mCurrentFocus` gives one line
        + (focus_lines(phone) if section == "windows" else "") +
        "  mInTouchMode=true\n  mBlurEnabled=true\n  mDisableSecureWindows=false\n")
    displays = (
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n"
        "  Display: mDisplayId=0 rootTasks=2\n"
        f"    init={width}x{height} {density}dpi cur={width}x{height} app={width}x{height - 63}\n"
        "    deferred=false mLayoutNeeded=false\n\n" + focus_lines(phone))
    sections = {
        "lastanr": "WINDOW MANAGER LAST ANR (dumpsys window lastanr)\n  <no ANR has occurred since boot>\n",
        "policy": "WINDOW MANAGER POLICY STATE (dumpsys window policy)\n"
                  "    mSafeMode=false mSystemReady=true mSystemBooted=true\n"
                  "    mKeyguardDrawComplete=true mWindowManagerDrawComplete=true\n",
        "displays": displays,
        "windows": windows,
    }
    if section is not None:
        return sections.get(section, f"Bad window command, or no windows match: {section}\n")
    return "\n".join(sections.values())


def activity_dump(phone) -> str:
    package, cls, short, task = _names(phone)
    record = f"ActivityRecord{{{_hash(short)} u0 {short} t{task}}}"
    return ("ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
            "Display #0 (activities from top to bottom):\n"
            f"  * Task{{{_hash(package)} #{task} type=standard A=10123:{package} U=0 visible=true "
            "visibleRequested=true mode=fullscreen translucent=false sz=1}\n"
            f"    mResumedActivity: {record}\n"
            f"    * Hist  #0: {record}\n"
            f"        packageName={package} processName={package}\n"
            f"        intent={{act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] "
            f"flg=0x10200000 cmp={short}}}\n\n"
            f"  ResumedActivity: {record}\n\n"
            f"  topResumedActivity={record}\n")


def dumpsys_cmd(sh, argv, io, ctx) -> int:
    if len(argv) == 1 or argv[1] == "-l":
        io.out.write("Currently running services:\n" + "".join(f"  {s}\n" for s in SERVICES))
        return 0
    service, rest = argv[1], argv[2:]
    if service == "window":
        args = [a for a in rest if not a.startswith("-")]
        io.out.write(window_dump(sh.phone, args[0] if args else None))
    elif service == "activity":
        sub = next((a for a in rest if not a.startswith("-")), None)
        if sub not in (None, "activities", "a", "top", "recents"):
            io.out.write(f"Bad activity command, or no activities match: {sub}\n"
                         "Use -h for help.\n")
        else:
            io.out.write(activity_dump(sh.phone))
    elif service in SERVICES:
        io.out.write(f"DUMP OF SERVICE {service}:\n")
    else:
        io.err.write(f"Can't find service: {service}\n")
    return 0
