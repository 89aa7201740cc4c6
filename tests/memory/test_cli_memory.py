"""`hexa memory ...` through hexa's own entry point (``app.cli.main``): output, exit statuses and
the error contract (a user error: one line and status 2; an unexpected one: its traceback in
errors.log). In-process with the hash embedder; once in a subprocess with the real MiniLM."""
from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys

import pytest

from app.cli import main
from support.fakes import HashEmbedder
from memory import Memory
from support.memory_helpers import child_env


@pytest.fixture
def hexa(tmp_path, monkeypatch, capsys):
    """``hexa(*argv) -> (status, stdout, stderr)`` on a data folder in tmp_path."""
    monkeypatch.setenv("HEXA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HEXA_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr("memory.memory.Embedder", lambda *a, **kw: HashEmbedder())   # (model, threads=)

    def run(*argv):
        capsys.readouterr()
        status = main(["memory", *map(str, argv)])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return status, out, err
    return run


def _open(tmp_path) -> Memory:
    return Memory.open(tmp_path / "data", embedder=HashEmbedder())


def test_add_reports_each_refused_file_once_and_exits_2(hexa, tmp_path):
    good = tmp_path / "lighthouse.md"
    good.write_text("# Lighthouses\n\nThe Fresnel lens lets a lighthouse beam reach sailors "
                    "forty kilometres away at night.")
    bad = tmp_path / "photo.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (tmp_path / "papers").mkdir()
    status, out, err = hexa("add", bad, good, tmp_path / "missing.txt", tmp_path / "papers")
    assert status == 2
    assert out.startswith("lighthouse.md: added as document 1 (1 chunks, 100 chars, ")
    assert err.splitlines() == [
        "hexa: photo.png: unsupported file type .png (supported: txt, md, pdf, docx, html and "
        "source files)",
        "hexa: missing.txt: no such file",
        "hexa: papers: is a folder, not a file",
        "hexa: 3 of 4 file(s) not added"]
    status, out, err = hexa("add", good)
    assert (status, out, err) == (0, "lighthouse.md: already in memory (document 1)\n", "")


def test_add_size_limit_is_in_mib(hexa, tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(3 * 1024 * 1024)
    status, _, err = hexa("add", "--max-mb", "2", big)
    assert status == 2
    assert err.splitlines()[0] == "hexa: big.txt: too large (3.0 MiB; limit 2 MiB)"


def test_stats_search_export_and_forget(hexa, tmp_path):
    doc = tmp_path / "lighthouse.md"
    doc.write_text("The Fresnel lens lets a lighthouse beam reach sailors far away.")
    assert hexa("add", doc)[0] == 0
    with _open(tmp_path) as mem:
        s = mem.new_session("assistant", "Chat about lights")
        mem.add_message(s.id, "user", "How far can a lighthouse be seen?")
        mem.add_message(s.id, "assistant", "Up to about 40 km.", token_ids=[1, 2, 3])

    status, out, _ = hexa("stats", "--json")
    st = json.loads(out)
    assert status == 0 and (st["documents"], st["sessions"], st["messages"]) == (1, 1, 2)
    status, out, _ = hexa("stats")
    assert status == 0 and "documents                     1" in out.splitlines()

    status, out, _ = hexa("search", "Fresnel lens", "--kind", "chunk")
    assert status == 0 and out.splitlines()[0].endswith("chunk: lighthouse.md #1")

    status, out, _ = hexa("export", "--session", s.id, "--format", "json")
    assert status == 0 and json.loads(out)["session"]["title"] == "Chat about lights"
    dest = tmp_path / "chat.md"
    assert hexa("export", "--session", s.id, "-o", dest)[0] == 0
    assert dest.read_text().startswith("# Chat about lights")
    assert hexa("export", "--session", 99) == (2, "", "hexa: no session 99\n")
    status, _, err = hexa("export", "--session", s.id, "-o", tmp_path / "nowhere" / "x.md")
    assert status == 2 and err.startswith("hexa: cannot write ") and err.count("\n") == 1

    assert hexa("forget", "--session", s.id) == (
        0, f"forgot session {s.id} ('Chat about lights', 2 messages)\n", "")
    assert hexa("forget", "--session", s.id) == (2, "", f"hexa: no session {s.id}\n")
    assert hexa("forget", "--doc", 1) == (0, "forgot document 1 (lighthouse.md, 1 chunks)\n", "")
    assert hexa("forget", "--doc", 1) == (2, "", "hexa: no document 1\n")
    assert hexa("docs") == (0, "no documents\n", "")
    assert hexa("sessions") == (0, "no sessions\n", "")


def test_forget_needs_exactly_one_of_session_and_doc(hexa):
    for argv in (("forget",), ("forget", "--session", "1", "--doc", "2")):
        with pytest.raises(SystemExit) as ei:
            hexa(*argv)
        assert ei.value.code == 2


def test_wipe_needs_confirmation(hexa, tmp_path, monkeypatch):
    with _open(tmp_path) as mem:
        mem.new_session("assistant")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal
    status, _, err = hexa("wipe")
    assert status == 2 and "--yes" in err and err.count("\n") == 1

    class TTY(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", TTY("no\n"))
    assert hexa("wipe")[0] == 2
    with _open(tmp_path) as mem:
        assert len(mem.list_sessions()) == 1
    monkeypatch.setattr("sys.stdin", TTY("yes\n"))
    assert hexa("wipe")[:2] == (0, "memory wiped\n")
    with _open(tmp_path) as mem:
        assert mem.list_sessions() == []
        mem.new_session("assistant")
    assert hexa("wipe", "--yes")[0] == 0


def test_reindex_and_a_store_from_the_future(hexa, tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("Some text about owls hunting at night.")
    assert hexa("add", f)[0] == 0
    status, out, _ = hexa("reindex")
    assert status == 0 and out.startswith("reindexed 1 vectors in ")
    con = sqlite3.connect(tmp_path / "data" / "memory" / "hexa.db")
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    status, out, err = hexa("stats")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("hexa: memory store ") and "newer" in err


def test_unexpected_errors_go_to_the_log_and_ctrl_c_exits_130(hexa, tmp_path, monkeypatch):
    def boom(self):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Memory, "stats", boom)
    status, _, err = hexa("stats")
    log = tmp_path / "logs" / "errors.log"
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("hexa: internal error: RuntimeError: disk on fire (details in ")
    assert "Traceback" in log.read_text() and "disk on fire" in log.read_text()

    def interrupted(self, *a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(Memory, "add_document", interrupted)
    f = tmp_path / "a.txt"
    f.write_text("text")
    assert hexa("add", f)[0] == 130


@pytest.mark.slow
def test_hexa_memory_in_a_subprocess_with_the_real_embedder(tmp_path):
    env = child_env() | {"HEXA_DATA_DIR": str(tmp_path / "data"),
                         "HEXA_LOG_DIR": str(tmp_path / "logs")}

    def hexa(*argv):
        return subprocess.run([sys.executable, "-m", "app.cli", "memory", *map(str, argv)],
                              capture_output=True, text=True, env=env, timeout=300)

    doc = tmp_path / "router.md"
    doc.write_text("To reset the Zephyr X2 router, hold the pinhole button for thirty seconds.\n\n"
                   "Jazz music originated in New Orleans in the early twentieth century.")
    run = hexa("add", doc, tmp_path / "missing.txt")
    assert run.returncode == 2
    assert run.stdout.startswith("router.md: added as document 1 ")
    assert run.stderr.splitlines() == ["hexa: missing.txt: no such file",
                                       "hexa: 1 of 2 file(s) not added"]
    run = hexa("search", "how do I factory reset my router?", "--json")
    assert run.returncode == 0 and "pinhole" in json.loads(run.stdout)[0]["text"]
    run = hexa("forget", "--doc", 7)
    assert (run.returncode, run.stdout, run.stderr) == (2, "", "hexa: no document 7\n")
