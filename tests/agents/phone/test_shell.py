"""The phone's sh: quoting as a real shell does it (what the agent's quoting is tested against),
``history`` as the proof of what ran, and the commands with the texts a real phone prints."""
from __future__ import annotations

import json
import time

import pytest
from support.fake_phone import LAUNCHER, FakePhone

from agents.phone.shell.sh import Shell


@pytest.fixture
def phone():
    return FakePhone()


@pytest.fixture
def sh(phone):
    return Shell(phone, max_sleep_s=0.05)


# -- quoting and what runs --------------------------------------------------------------------
@pytest.mark.parametrize("line, argv", [
    ("echo 'a  b' c", ["echo", "a  b", "c"]),
    ("echo \"a  b\" c", ["echo", "a  b", "c"]),
    ("echo 'it''s' \"x\"'y'z", ["echo", "its", "xyz"]),
    ("echo '$HOME' \"$HOME\" $HOME", ["echo", "$HOME", "/", "/"]),
    (r"echo \$HOME \"q\" a\ b \\", ["echo", "$HOME", '"q"', "a b", "\\"]),
    (r'echo "a\"b" "c\\d" "e\$f" "g\`h" "i\nj"', ["echo", 'a"b', "c\\d", "e$f", "g`h", "i\\nj"]),
    ("echo '\\' 'a\"b'", ["echo", "\\", 'a"b']),
    ("echo \"\" '' x", ["echo", "", "", "x"]),
    ("echo a#b #comment", ["echo", "a#b"]),
])
def test_words_are_split_and_unquoted_like_sh(sh, line, argv):
    sh.run(line)
    assert sh.history == [argv]


def test_single_quotes_keep_everything_literal(sh):
    out = sh.run("echo '$(touch /sdcard/pwned) `touch /sdcard/pwned2`; rm -f x && reboot | sh'")
    assert out == "$(touch /sdcard/pwned) `touch /sdcard/pwned2`; rm -f x && reboot | sh\n"
    assert sh.history == [["echo", "$(touch /sdcard/pwned) `touch /sdcard/pwned2`; rm -f x && reboot | sh"]]
    assert sh.fs.read("/sdcard/pwned") is None


def test_double_quotes_run_substitutions(sh):
    assert sh.run('echo "x$(echo in)y" "`echo back`"') == "xiny back\n"
    assert sh.history == [["echo", "in"], ["echo", "back"], ["echo", "xiny", "back"]]


def test_substitution_really_executes_so_bad_quoting_shows(sh, phone):
    sh.run('input text "$(touch /sdcard/pwned)hello"')
    assert ["touch", "/sdcard/pwned"] in sh.history
    assert sh.fs.read("/sdcard/pwned") == ""
    assert phone.events == [("text", "hello")]


def test_unquoted_substitution_is_split_quoted_is_not(sh):
    sh.run("x='a  b'; echo $x; echo \"$x\"; echo $(echo 1 2)")
    assert sh.history == [["echo", "a", "b"], ["echo", "a  b"], ["echo", "1", "2"], ["echo", "1", "2"]]


def test_properly_quoted_injection_is_only_data(sh, phone):
    sh.run("input text 'a;reboot' && input text \"b && rm -rf /\" && input text c\\|sh")
    assert sh.history == [["input", "text", "a;reboot"], ["input", "text", "b && rm -rf /"],
                          ["input", "text", "c|sh"]]
    assert [e[1] for e in phone.events] == ["a;reboot", "b && rm -rf /", "c|sh"]


def test_operators_and_status(sh):
    assert sh.run("echo a; echo b") == "a\nb\n"
    assert sh.run("echo a\necho b") == "a\nb\n"
    assert sh.run("false && echo no; true && echo yes") == "yes\n"
    assert sh.run("true || echo no; false || echo yes") == "yes\n"
    assert sh.run("false; echo $?; true; echo $?") == "1\n0\n"
    assert sh.run("! false && echo negated") == "negated\n"
    assert sh.run("echo one | grep o && echo found || echo missing") == "one\nfound\n"
    assert sh.run("echo one | grep z && echo found || echo missing") == "missing\n"
    assert sh.run("echo a &&\necho b") == "a\nb\n"


def test_exit_stops_the_line(sh):
    result = sh.execute("echo a; exit 3; echo b")
    assert (result.output, result.status, result.exited) == ("a\n", 3, True)
    assert sh.run("echo $(exit 4; echo no) after") == "after\n"


def test_a_syntax_error_runs_nothing_of_its_line(sh):
    assert sh.run("echo a; echo 'b") == "/system/bin/sh: no closing quote\n"
    assert sh.run("echo a; ( rm x )") == "/system/bin/sh: syntax error: '(' unexpected\n"
    assert sh.run("if true; then echo x; fi") == "/system/bin/sh: syntax error: 'if' unexpected\n"
    assert sh.run("echo a;; echo b").startswith("/system/bin/sh: syntax error")
    assert sh.history == []
    assert sh.run("echo first\necho 'broken") == "first\n/system/bin/sh: no closing quote\n"
    assert sh.history == [["echo", "first"]]


def test_redirections(sh):
    assert sh.run("foo 2>/dev/null; echo $?") == "127\n"
    assert sh.run("echo out > /dev/null") == ""
    assert sh.run("foo > /dev/null 2>&1") == ""
    assert sh.run("foo 2>&1 | grep -c found") == "1\n"
    assert sh.run("foo | grep -c found") == "/system/bin/sh: foo: inaccessible or not found\n0\n"
    sh.run("echo one > /sdcard/f.txt; echo two >> /sdcard/f.txt")
    assert sh.run("cat /sdcard/f.txt") == "one\ntwo\n"
    assert sh.run("grep tw < /sdcard/f.txt") == "two\n"
    assert sh.run("echo x > /system/x") == "/system/bin/sh: can't create /system/x: Read-only file system\n"
    assert sh.run("echo x > /data/x") == "/system/bin/sh: can't create /data/x: Permission denied\n"
    assert sh.history[-1] == ["grep", "tw"]   # a failed redirection stops its command


def test_variables_sh_c_and_paths(sh):
    assert sh.run("a=1 b=\"2 3\"; echo $a-$b ${a}") == "1-2 3 1\n"
    assert sh.run("echo $a") == "\n"   # every `adb shell` line is a new shell
    assert sh.run("sh -c 'echo $0:$1:$2' name one 'two three'") == "name:one:two three\n"
    assert sh.run("echo 'echo from stdin' | sh") == "from stdin\n"
    assert sh.run("/system/bin/echo full path") == "full path\n"
    assert sh.run("cd /sdcard && pwd && echo x > rel.txt && cat /sdcard/rel.txt") == "/sdcard\nx\n"
    assert sh.run("cd /nope") == "/system/bin/sh: cd: /nope: No such file or directory\n"


def test_unknown_command_is_mksh_text(sh):
    result = sh.execute("reboot now")
    assert result.output == "/system/bin/sh: reboot: inaccessible or not found\n"
    assert result.status == 127
    assert sh.history == [["reboot", "now"]]


# -- input ------------------------------------------------------------------------------------
def test_input_gestures(sh, phone):
    sh.run("input tap 100 200; input tap 10.7 20.2; input touchscreen tap 1 2; input -d 0 tap 3 4")
    sh.run("input swipe 1 2 300 400; input swipe 1 2 3 4 150; input swipe 50 60 50 60 800")
    assert phone.events == [("tap", 100, 200), ("tap", 10, 20), ("tap", 1, 2), ("tap", 3, 4),
                            ("swipe", 1, 2, 300, 400, 300), ("swipe", 1, 2, 3, 4, 150),
                            ("long_press", 50, 60)]


def test_input_keyevents_by_number_and_name(sh, phone):
    sh.run("input keyevent 3 4 66 67 82 187 24 25; input keyevent KEYCODE_BACK HOME NOSUCH 9999")
    assert [e[1] for e in phone.events] == [
        "KEYCODE_HOME", "KEYCODE_BACK", "KEYCODE_ENTER", "KEYCODE_DEL", "KEYCODE_MENU",
        "KEYCODE_APP_SWITCH", "KEYCODE_VOLUME_UP", "KEYCODE_VOLUME_DOWN", "KEYCODE_BACK", "KEYCODE_HOME"]
    assert sh.run("input keyevent --longpress 4") == ""


def test_input_text(sh, phone):
    assert sh.run("input text hello%sworld; input text 'a%%sb'; input text 100%") == ""
    assert [e[1] for e in phone.events] == ["hello world", "a% b", "100%"]
    out = sh.run("input text 'héllo'")
    assert out.startswith("\nException occurred while executing 'text':\n"
                          "java.lang.NullPointerException: Attempt to get length of null array\n"
                          "\tat com.android.server.input.InputShellCommand.sendText(")
    assert len(phone.events) == 3   # nothing at all typed


def test_input_errors_are_the_phones(sh, phone):
    out = sh.run("input tap 100")
    assert out.startswith("\nException occurred while executing 'tap':\n"
                          'java.lang.IllegalArgumentException: Argument expected after "100"\n\tat ')
    assert sh.run("input tap x 5").splitlines()[2] == \
        "java.lang.IllegalArgumentException: Error: Invalid arguments for command: tap"
    assert sh.run("input text").splitlines()[2].endswith('Argument expected after "text"')
    assert sh.run("input swipe 1 2 3").splitlines()[2].endswith('Argument expected after "3"')
    assert sh.run("input fly 1 2") == "Unknown command: fly\n"
    assert sh.run("input").startswith("Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n")
    assert sh.last_status == 0
    assert phone.events == []


# -- uiautomator and files ---------------------------------------------------------------------
def test_uiautomator_dump(sh, phone):
    assert sh.run("uiautomator dump") == "UI hierchary dumped to: /sdcard/window_dump.xml\n"
    assert sh.run("cat /sdcard/window_dump.xml") == phone.dump_ui()
    assert sh.run("uiautomator dump --compressed /sdcard/u.xml") == "UI hierchary dumped to: /sdcard/u.xml\n"
    assert sh.fs.read("/sdcard/u.xml") == phone.dump_ui()
    assert sh.run("uiautomator dump /dev/tty") == phone.dump_ui() + "UI hierchary dumped to: /dev/tty\n"
    assert sh.run("uiautomator").startswith("Usage: uiautomator <subcommand> [options]\n")


def test_dump_not_idle_from_the_phone_and_from_busy(sh, phone):
    phone.not_idle = 1
    result = sh.execute("rm -f /sdcard/window_dump.xml; uiautomator dump")
    assert (result.output, result.status) == ("ERROR: could not get idle state.\n", 0)
    assert sh.fs.read("/sdcard/window_dump.xml") is None
    assert sh.run("hexa-phone busy 2") == ""
    assert sh.run("uiautomator dump; uiautomator dump") == "ERROR: could not get idle state.\n" * 2
    assert sh.run("uiautomator dump") == "UI hierchary dumped to: /sdcard/window_dump.xml\n"


def test_file_commands(sh):
    sh.run("echo data > /sdcard/a.txt")
    assert sh.run("ls /sdcard | grep a.txt") == "a.txt\n"
    assert sh.run("ls /sdcard/a.txt /sdcard/nope") == "/sdcard/a.txt\nls: /sdcard/nope: No such file or directory\n"
    assert sh.run("cat /sdcard/nope") == "cat: /sdcard/nope: No such file or directory\n"
    assert sh.run("ls /data") == "ls: /data: Permission denied\n"
    assert sh.run("rm /sdcard/a.txt && cat /sdcard/a.txt") == "cat: /sdcard/a.txt: No such file or directory\n"
    assert sh.run("rm /sdcard/a.txt") == "rm: /sdcard/a.txt: No such file or directory\n"
    assert sh.run("rm -f /sdcard/a.txt; echo $?") == "0\n"
    assert sh.run("cat /storage/emulated/0/window_dump.xml; echo $?") == \
        "cat: /storage/emulated/0/window_dump.xml: No such file or directory\n1\n"


def test_simple_builtins(sh):
    assert sh.run("echo -n a; echo 'b\\tc'; echo -E 'd\\n'; echo 'e\\cf'; echo") == "ab\tc\nd\\n\ne\n"
    assert sh.run("printf '%s=%d\\n' a 1 b 2") == "a=1\nb=2\n"
    assert sh.run("true; echo $?; false; echo $?; :") == "0\n1\n"
    start = time.monotonic()
    assert sh.run("sleep 30 && echo woke") == "woke\n"
    assert time.monotonic() - start < 2          # capped
    assert sh.run("id") .startswith("uid=2000(shell) gid=2000(shell)")


def test_text_filters(sh):
    sh.fs.write("/sdcard/t.txt", "Alpha\nbeta\nGamma\ndelta\n")
    assert sh.run("cat /sdcard/t.txt | grep -i A | head -n 2") == "Alpha\nbeta\n"
    assert sh.run("grep -v a /sdcard/t.txt") == ""
    assert sh.run("grep -E 'Al|Ga' /sdcard/t.txt") == "Alpha\nGamma\n"
    assert sh.run("grep 'Al|Ga' /sdcard/t.txt; echo $?") == "1\n"       # basic regex: | is literal
    assert sh.run("grep 'Al\\|Ga' /sdcard/t.txt") == "Alpha\nGamma\n"
    assert sh.run("grep -c '[[:upper:]]' /sdcard/t.txt") == "2\n"
    assert sh.run("tail -n 1 /sdcard/t.txt; tail -2 /sdcard/t.txt | head -1") == "delta\nGamma\n"
    assert sh.run("cat /sdcard/t.txt | wc -l") == "4\n"
    assert sh.run("grep x /sdcard/none; echo $?") == "grep: /sdcard/none: No such file or directory\n2\n"
    assert sh.run("grep") == 'grep: Need 1 argument (see "grep --help")\n'


# -- system commands ---------------------------------------------------------------------------
def test_dumpsys_window_names_the_focus(sh, phone):
    phone.launch("com.example.notes")
    out = sh.run("dumpsys window")
    assert "WINDOW MANAGER WINDOWS (dumpsys window windows)" in out
    focus = sh.run("dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'").splitlines()
    assert len(focus) == 2
    assert focus[0].startswith("  mCurrentFocus=Window{")
    assert focus[0].endswith(" u0 com.example.notes/com.example.notes.MainActivity}")
    assert focus[1].startswith("  mFocusedApp=ActivityRecord{")
    assert focus[1].split()[2] == "com.example.notes/.MainActivity"
    assert "mCurrentFocus=" in sh.run("dumpsys window windows")
    assert "topResumedActivity=" in sh.run("dumpsys activity activities")
    assert sh.run("dumpsys nosuch") == "Can't find service: nosuch\n"


def test_monkey(sh, phone):
    out = sh.run("monkey -p com.example.notes -c android.intent.category.LAUNCHER 1")
    assert out.startswith("  bash arg: -p\n  bash arg: com.example.notes\n")
    assert "args: [-p, com.example.notes, -c, android.intent.category.LAUNCHER, 1]\n" in out
    assert out.endswith("Events injected: 1\n## Network stats: elapsed time=14ms (0ms mobile, 0ms wifi, "
                        "14ms not connected)\n")
    assert phone.focus()[0] == "com.example.notes"
    result = sh.execute("monkey -p com.nope -c android.intent.category.LAUNCHER 1")
    assert result.output.endswith('data="android.intent.category.LAUNCHER"\n'
                                  "** No activities found to run, monkey aborted.\n")
    assert result.status == 251


def test_am(sh, phone):
    assert sh.run("am start -n com.example.notes/.EditActivity") == \
        "Starting: Intent { cmp=com.example.notes/.EditActivity }\n"
    assert phone.focus() == ("com.example.notes", "com.example.notes.EditActivity")
    assert sh.run("am start -n com.example.notes/com.example.notes.EditActivity") == (
        "Starting: Intent { cmp=com.example.notes/.EditActivity }\n"
        "Warning: Activity not started, intent has been delivered to currently running top-most instance.\n")
    assert sh.run("am start -n com.example.notes/.Nope") == (
        "Starting: Intent { cmp=com.example.notes/.Nope }\nError type 3\n"
        "Error: Activity class {com.example.notes/com.example.notes.Nope} does not exist.\n")
    out = sh.run("am start -W -a android.intent.action.MAIN -c android.intent.category.LAUNCHER "
                 "-n com.android.settings/.Settings")
    assert out.splitlines() == [
        "Starting: Intent { act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] "
        "cmp=com.android.settings/.Settings }", "Status: ok", "LaunchState: COLD",
        "Activity: com.android.settings/.Settings", "TotalTime: 312", "WaitTime: 318", "Complete"]
    assert sh.run("am start -a android.intent.action.VIEW -d https://x.org").splitlines()[1] == \
        "Error: Activity not started, unable to resolve Intent { act=android.intent.action.VIEW " \
        "dat=https://x.org flg=0x10000000 }"
    assert sh.run("am start --bogus").splitlines()[2] == "java.lang.IllegalArgumentException: Unknown option: --bogus"
    assert sh.run("am force-stop com.android.settings") == ""
    assert phone.focus() == LAUNCHER


def test_pm_getprop_wm(sh):
    assert sh.run("pm list packages") == \
        "package:com.android.launcher3\npackage:com.android.settings\npackage:com.example.notes\n"
    assert sh.run("pm list packages -3") == "package:com.example.notes\n"
    assert sh.run("pm list packages notes") == "package:com.example.notes\n"
    assert sh.run("getprop ro.product.model") == "Hexa Virtual Phone\n"
    assert sh.run("getprop no.such.prop") == "\n"
    props = sh.run("getprop").splitlines()
    assert "[ro.build.version.sdk]: [34]" in props and props == sorted(props)
    assert sh.run("wm size") == "Physical size: 1080x2400\n"
    assert sh.run("wm size 720x1600 && wm size") == "Physical size: 1080x2400\nOverride size: 720x1600\n"
    assert sh.run("wm size reset; wm size") == "Physical size: 1080x2400\n"
    assert sh.run("wm size big") == "Error: bad size big\n"
    assert sh.run("wm density") == "Physical density: 420\n"


def test_hexa_phone(sh, phone):
    phone.launch("com.example.notes")
    assert json.loads(sh.run("hexa-phone state")) == phone.state()
    sh.run("echo x > /sdcard/x.txt; hexa-phone busy 3; hexa-phone reset")
    assert phone.resets == 1 and phone.focus() == LAUNCHER
    assert sh.fs.read("/sdcard/x.txt") is None and sh.busy_dumps == 0
    assert sh.execute("hexa-phone fly").status == 1
