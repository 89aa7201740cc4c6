"""`hexa` in a real terminal (tmux): starts, accepts a prompt, quits cleanly with Ctrl+Q."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(shutil.which("tmux") is None,
                                 reason="tmux is not installed (apt-get install -y tmux)")]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_for(session: str, text: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not on screen after {timeout}s:\n{screen}")


def test_hexa_in_tmux(tmp_path):
    pytest.importorskip("engine").__dict__.get("Engine") or pytest.skip("engine.Engine not available")
    session = f"hexa-test-{os.getpid()}"
    env = {f"HEXA_{k}_DIR": str(tmp_path / k.lower()) for k in ("CONFIG", "DATA", "LOG")}
    env["HEXA_CACHE_DIR"] = os.environ.get("HEXA_CACHE_DIR", str(tmp_path / "cache"))  # converted model
    env["HEXA_MAX_TOKENS"] = "8"
    exports = " ".join(f"{k}={v}" for k, v in env.items())
    hexa = Path(sys.executable).parent / "hexa"
    if hexa.exists() and (ROOT / "app" / "cli.py").exists():
        entry = str(hexa)                                    # the real command
    else:                                                    # cli not there yet: same entry point
        entry = f"{sys.executable} -c 'from app.tui import run_tui; raise SystemExit(run_tui())'"
    done = tmp_path / "exit-code"
    # COLUMNS/LINES from the caller (CI sets them) would reach the pane and win over its real size
    cmd = f"cd {ROOT} && env -u COLUMNS -u LINES {exports} TERM=xterm-256color {entry}; echo $? > {done}"
    # a server started without a client may keep tmux's 80x24 default: size the window first,
    # then start hexa in it (the app also works at 80x24: the sessions list then starts hidden)
    tmux("new-session", "-d", "-s", session, "-x", "130", "-y", "36", "sleep 600")
    try:
        tmux("set-option", "-t", session, "window-size", "manual")
        tmux("resize-window", "-t", session, "-x", "130", "-y", "36")
        tmux("respawn-pane", "-k", "-t", session, cmd)
        wait_for(session, "F2 Assistant", 60)
        # typed at once, while the model may still be loading: it must be sent when ready, not lost
        tmux("send-keys", "-t", session, "-l", "Hello")
        tmux("send-keys", "-t", session, "Enter")
        screen = wait_for(session, " tok ·", 180)          # the response footer
        (tmp_path / "screen.txt").write_text(screen)
        tmux("send-keys", "-t", session, "C-q")
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.exists() and done.read_text().strip() == "0"
    finally:
        tmux("kill-session", "-t", session)
