import pytest

from app.config import ConfigError, Settings, load_settings, load_settings_lenient, save_settings


def test_defaults_file_env_cli_precedence(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('method = "sam"\nmax_tokens = 100\ntemperature = 0.5\n[keymap]\n"chat.send" = "ctrl+s"\n')
    s = load_settings(path, env={"HEXA_MAX_TOKENS": "50", "HEXA_RETRIEVAL": "off"}, method="vanilla")
    assert (s.method, s.max_tokens, s.temperature, s.retrieval) == ("vanilla", 50, 0.5, False)
    assert s.keymap == {"chat.send": "ctrl+s"} and not s.speculative
    assert load_settings(tmp_path / "missing.toml", env={}) == Settings()


def test_save_round_trip(tmp_path):
    s = Settings(model="/models/qwen", top_p=0.9, keymap={"app.quit": "ctrl+x"})
    path = save_settings(s, tmp_path / "sub" / "config.toml")
    assert load_settings(path, env={}) == s


@pytest.mark.parametrize("text", ['max_tokens = -1', 'temperature = "hot"', 'colour = "red"',
                                  'backend = "gpu"', 'not toml ==='])
def test_bad_config_is_one_line(tmp_path, text):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert "\n" not in str(info.value)
    settings, error = load_settings_lenient(path, env={}, model="x")
    assert settings == Settings(model="x") and error == str(info.value)


def test_bad_env_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="HEXA_TOP_P"):
        load_settings(tmp_path / "none.toml", env={"HEXA_TOP_P": "2"})
