"""`hexa memory ...` handlers, driven through argparse as the main CLI will."""
from __future__ import annotations

import argparse
import io
import json

from app.cli_memory import register
from memory import Memory


def run(data_dir, *argv):
    p = argparse.ArgumentParser(prog="hexa")
    sub = p.add_subparsers()
    register(sub)
    args = p.parse_args(["memory", *argv])
    args.data_dir = data_dir
    return args.func(args)


def test_cli_add_stats_search_export_forget(tmp_path, capsys):
    data = tmp_path / "data"
    good = tmp_path / "lighthouse.md"
    good.write_text("# Lighthouses\n\nThe Fresnel lens lets a lighthouse beam reach sailors "
                    "forty kilometres away at night.")
    bad = tmp_path / "photo.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    assert run(data, "add", str(bad), str(good), str(tmp_path / "missing.txt")) == 1
    out, err = capsys.readouterr()
    assert "lighthouse.md: added as document 1" in out
    assert "photo.png: unsupported file type" in err and "missing.txt: no such file" in err
    assert "Traceback" not in err
    assert run(data, "add", str(good)) == 0
    assert "already in memory" in capsys.readouterr().out

    with Memory.open(data) as mem:
        s = mem.new_session("assistant", "Chat about lights")
        mem.add_message(s.id, "user", "How far can a lighthouse be seen?")
        mem.add_message(s.id, "assistant", "Up to about 40 km.", token_ids=[1, 2, 3])

    assert run(data, "stats", "--json") == 0
    st = json.loads(capsys.readouterr().out)
    assert st["documents"] == 1 and st["sessions"] == 1 and st["messages"] == 2
    assert run(data, "stats") == 0
    assert "documents" in capsys.readouterr().out

    assert run(data, "search", "Fresnel lens range") == 0
    out = capsys.readouterr().out
    assert "lighthouse.md #1" in out.splitlines()[0]

    assert run(data, "export", "--session", str(s.id), "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["session"]["title"] == "Chat about lights"
    dest = tmp_path / "chat.md"
    assert run(data, "export", "--session", str(s.id), "--format", "md", "-o", str(dest)) == 0
    assert dest.read_text().startswith("# Chat about lights")
    capsys.readouterr()
    assert run(data, "export", "--session", "99") == 1
    assert capsys.readouterr().err.strip() == "hexa memory: no session 99"

    assert run(data, "forget", "--session", str(s.id)) == 0
    assert run(data, "forget", "--session", str(s.id)) == 1
    with Memory.open(data) as mem:
        assert mem.list_sessions() == []


def test_cli_wipe_needs_confirmation(tmp_path, capsys, monkeypatch):
    data = tmp_path / "data"
    with Memory.open(data) as mem:
        mem.new_session("assistant")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a TTY
    assert run(data, "wipe") == 1
    assert "--yes" in capsys.readouterr().err
    with Memory.open(data) as mem:
        assert len(mem.list_sessions()) == 1

    class TTY(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", TTY("no\n"))
    assert run(data, "wipe") == 1
    monkeypatch.setattr("sys.stdin", TTY("yes\n"))
    assert run(data, "wipe") == 0
    with Memory.open(data) as mem:
        assert mem.list_sessions() == []
    with Memory.open(data) as mem:
        mem.new_session("assistant")
    assert run(data, "wipe", "--yes") == 0


def test_cli_reindex_and_errors(tmp_path, capsys):
    data = tmp_path / "data"
    f = tmp_path / "a.txt"
    f.write_text("Some text about owls hunting at night.")
    assert run(data, "add", str(f)) == 0
    assert run(data, "reindex") == 0
    assert "reindexed 1 vectors" in capsys.readouterr().out
    # a store from the future is refused in one line, no traceback
    import sqlite3
    con = sqlite3.connect(data / "memory" / "hexa.db")
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    assert run(data, "stats") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "newer" in err
