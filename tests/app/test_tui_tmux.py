"""`hexa` in a real terminal (tmux), used as a person would: a prompt typed while the model loads, a
long answer in a 100x30 terminal that must stay in view to its last line, and Ctrl+Q in the middle
of the next answer, which must quit at once and keep the partial answer."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENS = Path(__file__).parent / "screens"
in_tmux = [pytest.mark.timeout(400), pytest.mark.slow,
           pytest.mark.skipif(shutil.which("tmux") is None,
                              reason="tmux is not installed (apt-get install -y tmux)")]


def marked(test):
    for mark in in_tmux:
        test = mark(test)
    return test


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def screen_of(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def wait_for(session: str, check, timeout: float, what: str) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = screen_of(session)
        if check(screen):
            return screen
        time.sleep(0.3)
    raise AssertionError(f"{what}: not on screen after {timeout}s:\n{screen}")


def streaming(screen: str) -> bool:
    """The last answer has text on screen and no figures line yet (it is still being written).

    A fast machine writes enough lines to scroll the answer's "hexa" label off the top before a
    capture sees it (CI: 200 tokens at 167 tok/s): then the transcript holds text of one answer
    only, with no label and no figures line, and that answer is the one being written."""
    rows = screen.splitlines()[1:]                      # the first row is the header
    end = next((i for i, row in enumerate(rows) if "Message (Enter" in row), len(rows))
    # the transcript's column only: the live panels may share the rows on the right
    lines = [re.split("[│╭╰]", row)[0].strip() for row in rows[:end]]
    last = max((i for i, line in enumerate(lines) if line in ("hexa", "You")), default=-1)
    after = lines[last + 1:]
    if any(" tok ·" in line for line in after):
        return False                                    # the last answer on screen has ended
    if last >= 0:
        return lines[last] == "hexa" and any(t and not t.endswith("…") for t in after[:2])
    return sum(1 for line in lines if line) >= 10       # a screenful of one unfinished answer


def test_streaming_is_told_apart_when_the_label_has_scrolled_off():
    """CI's screen after the story ended (the "hexa" label scrolled off at 167 tok/s), and the same
    screen before its figures line was written."""
    ended = (SCREENS / "story_ended_label_scrolled.txt").read_text()
    assert not streaming(ended)
    writing = "\n".join(line for line in ended.splitlines()
                        if " tok ·" not in line and "· vanilla ·" not in line)
    assert streaming(writing)
    # a previous answer's figures line and the new prompt's label: not streaming yet
    assert not streaming("hdr\nhexa\nSome answer.\n5 tok · 1.00 acc/step\nYou\nWrite a story.\n")
    assert streaming("hdr\nYou\nWrite a story.\nhexa\nOnce upon a time\n")
    assert not streaming("hdr\nYou\nWrite a story.\nhexa\nThinking…\n")


@marked
def test_hexa_in_tmux(tmp_path):
    session = f"hexa-test-{os.getpid()}"
    home = {f"HEXA_{k}_DIR": str(tmp_path / k.lower()) for k in ("CONFIG", "DATA", "LOG")}
    env = {**home, "HEXA_CACHE_DIR": os.environ.get("HEXA_CACHE_DIR", str(tmp_path / "cache")),
           "HEXA_MAX_TOKENS": "400", "HEXA_METHOD": "vanilla"}
    exports = " ".join(f"{k}={v}" for k, v in env.items())
    hexa = Path(sys.executable).parent / "hexa"
    done = tmp_path / "exit-code"
    # COLUMNS/LINES from the caller (CI sets them) would reach the pane and win over its real size
    cmd = f"cd {ROOT} && env -u COLUMNS -u LINES {exports} TERM=xterm-256color {hexa}; echo $? > {done}"
    # a server started without a client may keep tmux's 80x24 default: size the window first,
    # then start hexa in it
    tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", "sleep 900")
    try:
        tmux("set-option", "-t", session, "window-size", "manual")
        tmux("resize-window", "-t", session, "-x", "100", "-y", "30")
        # the pane outlives hexa, so a bad exit leaves its message on screen for the assertion
        tmux("set-option", "-t", session, "remain-on-exit", "on")
        tmux("respawn-pane", "-k", "-t", session, cmd)
        wait_for(session, lambda s: "F2 Assistant" in s, 60, "the app")
        # typed at once, while the model may still be loading: it must be sent when ready, not lost
        tmux("send-keys", "-t", session, "-l", "List ten tips for learning to cook, one per line.")
        tmux("send-keys", "-t", session, "Enter")
        screen = wait_for(session, lambda s: " tok ·" in s, 240, "the figures line under the answer")
        (tmp_path / "long-answer.txt").write_text(screen)
        # the answer's end is on screen: its tenth tip or later (the model may list more), or the limit
        items = [int(n) for n in re.findall(r"(?m)^\s*(\d+)\. ", screen)]
        assert max(items, default=0) >= 10 or "max_tokens" in screen or "token limit" in screen, screen

        tmux("send-keys", "-t", session, "-l", "Write a long story about a lighthouse keeper.")
        tmux("send-keys", "-t", session, "Enter")
        wait_for(session, streaming, 120, "the story streaming")
        t0 = time.monotonic()
        tmux("send-keys", "-t", session, "C-q")
        while not done.exists() and time.monotonic() - t0 < 15:
            time.sleep(0.1)
        quit_s = time.monotonic() - t0
        assert done.exists() and done.read_text().strip() == "0", \
            f"hexa did not exit cleanly:\n{tmux('capture-pane', '-p', '-S', '-60', '-t', session)}"
        assert quit_s < 6, f"Ctrl+Q took {quit_s:.1f} s"
    finally:
        tmux("kill-session", "-t", session)
    out = subprocess.run([str(hexa), "memory", "export", "--session", "1", "--format", "json"],
                         capture_output=True, text=True, env={**os.environ, **home}, cwd=ROOT)
    import json
    roles = [(m["role"], m["text"]) for m in json.loads(out.stdout)["messages"]]
    assert [r for r, _ in roles] == ["user", "assistant", "user", "assistant"], roles
    assert roles[3][1].strip(), "the partial story was not kept"


@marked
def test_agent_mode_in_tmux(tmp_path):
    """Agent mode on the embedded model: F10, the virtual phone from the palette, Explore (Ctrl+G)
    with its progress bar and Esc stopping it, a typed task, steps in the log and the phone panel,
    the episode's end, Ctrl+Q."""
    session = f"hexa-agent-test-{os.getpid()}"
    env = {**{f"HEXA_{k}_DIR": str(tmp_path / k.lower()) for k in ("CONFIG", "DATA", "LOG")},
           "HEXA_CACHE_DIR": os.environ.get("HEXA_CACHE_DIR", str(tmp_path / "cache")),
           "PYTHONPATH": str(ROOT)}           # this checkout's code, whatever `hexa` was installed from
    exports = " ".join(f"{k}={v}" for k, v in env.items())
    hexa = Path(sys.executable).parent / "hexa"
    done = tmp_path / "exit-code"
    cmd = f"cd {ROOT} && env -u COLUMNS -u LINES {exports} TERM=xterm-256color {hexa}; echo $? > {done}"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "36", "sleep 900")
    try:
        tmux("set-option", "-t", session, "window-size", "manual")
        tmux("resize-window", "-t", session, "-x", "120", "-y", "36")
        tmux("respawn-pane", "-k", "-t", session, cmd)
        wait_for(session, lambda s: "F10 Agent" in s, 60, "the app")
        tmux("send-keys", "-t", session, "F10")
        wait_for(session, lambda s: "Virtual phone" in s and "Explore" in s, 20, "the agent mode")
        tmux("send-keys", "-t", session, "C-p")
        time.sleep(1)
        tmux("send-keys", "-t", session, "-l", "Start the virtual phone")
        time.sleep(1.5)
        tmux("send-keys", "-t", session, "Enter")
        screen = wait_for(session, lambda s: "connected to 127.0.0.1:" in s, 60, "the virtual phone")
        assert "Home screen" in screen, screen           # the phone panel draws its first screen
        wait_for(session, lambda s: "no app explored yet" in s, 120, "the model, and the apps known")
        # Explore: the progress bar counts the actions; Esc stops it and its summary says so
        tmux("send-keys", "-t", session, "C-g")
        screen = wait_for(session, lambda s: re.search(r"app 1/10 · Settings: [1-9]\d*/300 actions", s), 60,
                          "the exploration's progress")
        tmux("send-keys", "-t", session, "Escape")
        screen = wait_for(session, lambda s: "— stopped" in s or "stopped (run" in s, 60,
                          "the exploration's summary")      # (wherever the log wraps it)
        (tmp_path / "explore.txt").write_text(screen)
        wait_for(session, lambda s: "explored: Settings (" in s, 20, "the apps known")
        tmux("send-keys", "-t", session, "-l", "Turn on airplane mode")
        tmux("send-keys", "-t", session, "Enter")
        screen = wait_for(session, lambda s: "step 1" in s and "→ " in s and "■ " in s, 120, "the episode")
        (tmp_path / "agent.txt").write_text(screen)
        assert re.search(r"■ \w+ after \d+ step", screen), screen
        tmux("send-keys", "-t", session, "C-q")
        t0 = time.monotonic()
        while not done.exists() and time.monotonic() - t0 < 15:
            time.sleep(0.1)
        assert done.exists() and done.read_text().strip() == "0", "hexa did not exit cleanly"
    finally:
        tmux("kill-session", "-t", session)
