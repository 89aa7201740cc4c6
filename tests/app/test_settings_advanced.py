"""The advanced options ([engine], [qnn], [memory]): every knob that used to be an environment
variable read deep in the engine or the memory is a setting now — the old variable names still
work, the file's tables too, a bad value is one line before anything loads, and the engine and the
memory get them as one options object."""
from __future__ import annotations

import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from app import settings as config
from app.settings import ConfigError, Settings, load, save_changes
from engine.options import EngineOptions
from memory.options import MemoryOptions

ROOT = Path(__file__).resolve().parents[2]

# (field, kept environment name, a good raw value, what it parses to, a bad raw value)
KNOBS = [
    ("engine_linear", "HEXA_LINEAR", "NUMPY", "numpy", "fast"),
    ("engine_decode", "HEXA_DECODE", "exact", "exact", "fp16"),
    ("engine_isa", "HEXA_ISA", "avx2", "avx2", "sse"),
    ("engine_kv", "HEXA_KV", "f16", "f16", "bf16"),
    ("engine_prompt", "HEXA_PROMPT", "INT8", "int8", "fp8"),
    ("engine_spin_us", "HEXA_SPIN_US", "50", 50, "-1"),
    ("qnn_switch", "HEXA_QNN_SWITCH", "0", False, "maybe"),
    ("qnn_early_switch", "HEXA_QNN_EARLY_SWITCH", "1", True, "2"),
    ("qnn_shared", "HEXA_QNN_SHARED", "auto", None, "both"),
    ("memory_embed_threads", "HEXA_EMBED_THREADS", "1", 1, "0"),
    ("memory_embed_model", "HEXA_EMBED_MODEL", str(ROOT), str(ROOT), str(ROOT / "no-such-folder")),
]


def test_every_former_variable_is_a_declared_option():
    declared = {config.env_var(n) for n in config.specs()} | {a for s, _ in config.specs().values() for a in s.aliases}
    assert {var for _, var, *_ in KNOBS} | {"HEXA_QNN_SOC", "CC"} <= declared
    assert {name for name, *_ in KNOBS} | {"engine_cc"} == {n for n, (s, _) in config.specs().items() if s.section}


@pytest.mark.parametrize("name, var, good, value, bad", KNOBS)
def test_the_kept_variable_sets_it_with_its_origin(tmp_path, name, var, good, value, bad):
    loaded = load(tmp_path / "none.toml", env={var: good})
    assert getattr(loaded.settings, name) == value and loaded.origins[name] == var
    assert loaded.overridden(name) == var


@pytest.mark.parametrize("name, var, good, value, bad", KNOBS)
def test_a_bad_value_is_one_line_naming_the_variable(tmp_path, name, var, good, value, bad):
    with pytest.raises(ConfigError) as info:
        load(tmp_path / "none.toml", env={var: bad})
    assert str(info.value).startswith(f"{var}={bad}: expected") and "\n" not in str(info.value)
    lenient = load(tmp_path / "none.toml", env={var: bad}, strict=False)    # the TUI: that value only
    assert lenient.problems == [str(info.value)] and getattr(lenient.settings, name) == getattr(Settings(), name)


def test_the_file_tables_and_their_errors(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('max_tokens = 9\n[engine]\nlinear = "numpy"\nspin_us = 0\n[qnn]\nswitch = true\n'
                    '[memory]\nembed_threads = 2\n')
    loaded = load(path, env={"HEXA_SPIN_US": "30"})
    s = loaded.settings
    assert (s.max_tokens, s.engine_linear, s.engine_spin_us, s.qnn_switch, s.memory_embed_threads) == (9, "numpy", 30, True, 2)
    assert loaded.origins["engine_linear"] == "config.toml" and loaded.origins["engine_spin_us"] == "HEXA_SPIN_US"
    for text, words in [('[engine]\nlinea = "mkl"\n', "[engine] has no option 'linea' (known: linear, decode"),
                        ('linear = "mkl"\n', "unknown setting 'linear'"),
                        ('engine = "mkl"\n', "[engine] must be a table"),
                        ('[engine]\nspin_us = 1.5\n', "engine.spin_us = 1.5: expected an integer"),
                        ('[qnn]\nshared = "sometimes"\n', "qnn.shared = 'sometimes': expected true, false or auto")]:
        path.write_text(text)
        with pytest.raises(ConfigError) as info:
            load(path, env={})
        assert words in str(info.value) and "\n" not in str(info.value), text


def test_hexa_qnn_soc_is_the_older_name_of_soc(tmp_path):
    loaded = load(tmp_path / "none.toml", env={"HEXA_QNN_SOC": "69"})
    assert loaded.settings.soc == "69" and loaded.origins["soc"] == "HEXA_QNN_SOC"
    both = load(tmp_path / "none.toml", env={"HEXA_QNN_SOC": "69", "HEXA_SOC": "43"})
    assert both.settings.soc == "43" and both.origins["soc"] == "HEXA_SOC"


def test_saving_writes_the_tables_and_keeps_the_rest(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('method = "sam"\n[engine]\nisa = "avx2"\n')
    save_changes(path, {"engine_linear": "numpy", "qnn_shared": False, "max_tokens": 5})
    assert tomllib.loads(path.read_text()) == {"method": "sam", "max_tokens": 5,
                                                "engine": {"isa": "avx2", "linear": "numpy"}, "qnn": {"shared": False}}
    save_changes(path, {"engine_linear": "native", "engine_isa": "auto", "qnn_shared": None})   # defaults: removed
    assert tomllib.loads(path.read_text()) == {"method": "sam", "max_tokens": 5}
    assert load(path, env={}).settings.engine_linear == "native"


def test_the_options_objects_carry_the_settings(tmp_path):
    s = load(tmp_path / "none.toml", env={"HEXA_LINEAR": "numpy", "HEXA_DECODE": "exact", "HEXA_ISA": "avx2",
                                          "HEXA_KV": "f32", "HEXA_SPIN_US": "7", "CC": "gcc", "HEXA_QNN_SWITCH": "off",
                                          "HEXA_QNN_EARLY_SWITCH": "on", "HEXA_QNN_SHARED": "0",
                                          "HEXA_EMBED_MODEL": str(ROOT), "HEXA_EMBED_THREADS": "3"}).settings
    assert config.engine_options(s) == EngineOptions("numpy", "exact", "avx2", "f32", 7, False, True, False, "gcc")
    assert config.memory_options(s) == MemoryOptions(ROOT, 3)
    assert config.engine_options(Settings()) == EngineOptions() and config.memory_options(Settings()) == MemoryOptions()


# The engine and the memory read no environment variable: every knob comes through the settings.
# Writing a process-wide default is allowed (engine/threads.py sets OMP_WAIT_POLICY before an OpenMP
# library loads; the memory sets the Hugging Face libraries' offline switches): ``os.environ.setdefault``.
# So is handing a copy of the environment to a child process (engine/bench/llamacpp.py's worker
# inherits PATH and the rest; memory/bench_crash.py's child gets its knobs added to the copy): the
# parent reads no knob from it.
READS = re.compile(r"os\.environ(?!\.setdefault\()(?!\)\s*$)|os\.getenv|\bgetenv\s*\(|os\.environb")
ALLOWED = re.compile(r"env\s*=\s*dict\(os\.environ\s*[,)]")


def test_engine_and_memory_read_no_environment_variable():
    found = []
    for package in ("engine", "memory"):
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix not in (".py", ".c", ".h"):
                continue
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#")[0] if path.suffix == ".py" else line
                if READS.search(code) and not ALLOWED.search(code):
                    found.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_check_itself_catches_reads():
    for line in ('x = os.environ.get("HEXA_X")', 'os.environ["A"]', 'os.getenv("A")',
                 'const char *e = getenv("HEXA_SPIN_US");', "if 'A' in os.environ:"):
        assert READS.search(line) and not ALLOWED.search(line), line
    for line in ('os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")', "env = dict(os.environ)",
                 'env = dict(os.environ, HEXA_DATA_DIR=str(data),'):
        assert not READS.search(line) or ALLOWED.search(line), line


def hexa(*args, env: dict, home: Path, dirs=("CONFIG", "DATA", "LOG", "CACHE")):
    import os

    full = {**os.environ, **env, **{f"HEXA_{n}_DIR": str(home / n.lower()) for n in dirs}}
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, env=full,
                          timeout=300, cwd=ROOT)


@pytest.mark.parametrize("var, bad", [(var, bad) for _, var, _, _, bad in KNOBS])
def test_hexa_ask_stops_before_load_with_one_line(tmp_path, monkeypatch, capsys, var, bad):
    from app.cli import main

    monkeypatch.setenv("HEXA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(var, bad)
    assert main(["ask", "hi"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hexa: {var}={bad}: expected"), lines
    assert not (tmp_path / "cache").exists()          # nothing loaded, nothing cached


def test_the_hexa_command_stops_the_same_way(tmp_path):
    """Once through a real process: the exit status and the one line a user sees."""
    t0 = time.monotonic()
    r = hexa("ask", "hi", env={"HEXA_LINEAR": "fast"}, home=tmp_path)
    assert r.returncode == 2 and r.stderr == "hexa: HEXA_LINEAR=fast: expected one of native, numpy\n"
    assert not (tmp_path / "cache").exists() and time.monotonic() - t0 < 20


@pytest.mark.slow
def test_hexa_doctor_shows_every_knob_with_its_origin_and_fails_on_a_bad_one(tmp_path):
    # the user's cache: a fresh one would compile the kernels (~45 s)
    r = hexa("doctor", env={"HEXA_LINEAR": "numpy", "HEXA_SPIN_US": "-5"}, home=tmp_path, dirs=("CONFIG", "DATA", "LOG"))
    assert r.returncode == 1 and "HEXA_SPIN_US=-5: expected an integer between 0 and 1000000" in r.stdout
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.split("settings (value", 1)[1].splitlines()[1:]}
    assert set(rows) == {config.key(n) for n in config.specs()}
    assert rows["engine.linear"][:2] == ["numpy", "HEXA_LINEAR"] and rows["engine.spin_us"][:2] == ["200", "default"]
    assert rows["qnn.switch"][:2] == ["auto", "default"] and rows["memory.embed_model"][-1] == "[HEXA_EMBED_MODEL]"


def test_docs_settings_lists_every_option_and_variable():
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    tables = {n for n, (_, kind) in config.specs().items() if kind is dict}      # [keymap], [servers.NAME]
    missing = [config.key(n) for n in config.specs() if f"`{config.key(n)}`" not in text and n not in tables]
    missing += [n for n in tables if f"`[{n}" not in text]
    missing += [v for n in config.specs() for v in config.env_vars(n) if f"`{v}`" not in text]
    assert not missing, missing
