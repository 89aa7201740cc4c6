"""One settings object for every entry point: precedence, provenance, checks, and saving only what
the user changed."""
from __future__ import annotations

import argparse
import tomllib

import pytest

from app import settings as config
from app.settings import ConfigError, Settings, load, save_changes
from engine.methods import BACKENDS, METHODS


def test_defaults_file_env_flags_precedence(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('method = "sam"\nmax_tokens = 100\ntemperature = 0.5\n[keymap]\n"chat.send" = "ctrl+s"\n')
    loaded = load(path, env={"HEXA_MAX_TOKENS": "50", "HEXA_RETRIEVAL": "off"}, flags={"method": "vanilla"})
    s = loaded.settings
    assert (s.method, s.max_tokens, s.temperature, s.retrieval) == ("vanilla", 50, 0.5, False)
    assert s.keymap == {"chat.send": "ctrl+s"} and not s.speculative
    assert loaded.overridden("max_tokens") == "HEXA_MAX_TOKENS" and loaded.overridden("method") == "--method"
    assert loaded.overridden("temperature") is None            # from the file: not an override
    assert load(tmp_path / "missing.toml", env={}).settings == Settings()


def test_methods_and_backends_are_the_engines():
    assert config.specs()["method"][0].choices == METHODS and "pld" not in METHODS
    assert config.specs()["backend"][0].choices == BACKENDS
    with pytest.raises(ConfigError, match="expected one of"):
        load(config.Path("/nonexistent.toml"), env={"HEXA_METHOD": "pld"})


@pytest.mark.parametrize("text", ['max_tokens = -1', 'temperature = "hot"', 'colour = "red"',
                                  'backend = "gpu"', 'not toml ===', 'threads = 1.5',
                                  '[keymap]\n"chat.snd" = "ctrl+s"'])
def test_bad_config_is_one_line(tmp_path, text):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load(path, env={})
    assert "\n" not in str(info.value)
    loaded = load(path, env={}, flags={"model": "x"}, strict=False)
    assert loaded.settings == Settings(model="x") and loaded.problems == [str(info.value)]


def test_non_utf8_config_is_a_config_error(tmp_path):
    path = tmp_path / "config.toml"
    path.write_bytes(b'model = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(path, env={})


def test_one_bad_variable_costs_only_that_value(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('max_tokens = 99\nmethod = "sam"\n')
    loaded = load(path, env={"HEXA_THREADS": "abc", "HEXA_TOP_P": "0.5"}, strict=False)
    s = loaded.settings
    assert (s.max_tokens, s.method, s.top_p, s.threads) == (99, "sam", 0.5, None)
    assert len(loaded.problems) == 1 and "HEXA_THREADS" in loaded.problems[0]
    with pytest.raises(ConfigError, match="HEXA_THREADS"):        # the command line stops at it
        load(path, env={"HEXA_THREADS": "abc"})


@pytest.mark.parametrize("flags, words", [({"threads": "-3"}, "--threads"),
                                          ({"temperature": "99"}, "--temperature"),
                                          ({"max_tokens": "-5"}, "--max-tokens"),
                                          ({"context": "10"}, "--context")])
def test_flags_are_checked_like_the_file(tmp_path, flags, words):
    with pytest.raises(ConfigError) as info:
        load(tmp_path / "none.toml", env={}, flags=flags)
    message = str(info.value)
    assert message.startswith(words) and ("at least" in message or "between" in message), message


def test_save_writes_only_the_changes_and_keeps_the_rest(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('model = "/models/qwen.gguf"\ntop_p = 0.9\n[keymap]\n"app.quit" = "ctrl+x"\n')
    loaded = load(path, env={"HEXA_MAX_TOKENS": "7"}, flags={"method": "sam"})
    assert loaded.settings.max_tokens == 7
    save_changes(path, {"temperature": 0.7, "keymap": {"chat.send": "ctrl+s"}})
    table = tomllib.loads(path.read_text())
    assert table == {"model": "/models/qwen.gguf", "top_p": 0.9, "temperature": 0.7,
                     "keymap": {"app.quit": "ctrl+x", "chat.send": "ctrl+s"}}   # no max_tokens, no method
    save_changes(path, {"temperature": 0.0})                   # back to the default: removed
    assert "temperature" not in tomllib.loads(path.read_text())


def test_save_refuses_to_overwrite_a_file_it_cannot_read(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("this is = not [toml\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        save_changes(path, {"max_tokens": 10})
    assert path.read_text() == "this is = not [toml\n"


def test_flags_reach_settings_before_or_after_the_subcommand():
    parser = argparse.ArgumentParser()
    config.add_flags(parser, config.MODEL_FLAGS, top_level=True)
    sub = parser.add_subparsers(dest="command")
    ask = sub.add_parser("ask")
    config.add_flags(ask, config.MODEL_FLAGS + config.GENERATION_FLAGS, top_level=False)
    assert config.flag_values(parser.parse_args(["--model", "m", "ask", "--max-tokens", "5"])) == \
        {"model": "m", "max_tokens": "5"}
    assert config.flag_values(parser.parse_args(["ask", "--model", "m"])) == {"model": "m"}
