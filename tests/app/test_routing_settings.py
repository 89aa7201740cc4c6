"""[servers.NAME] endpoints in config.toml: checked in one line, keys from the environment."""
from __future__ import annotations

import pytest

from app.routing import endpoints, prices
from app.settings import ConfigError, load, save_changes


def write(tmp_path, text):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_servers_are_read_with_their_key_from_the_environment(tmp_path):
    path = write(tmp_path, '[servers.lab]\nurl = "http://127.0.0.1:8080/v1"\nmodel = "smol"\n'
                           'api_key_env = "LAB_KEY"\nprice_in = 1e-7\nprice_out = 0\n'
                           '[servers.cloud]\nurl = "https://api.example.com/v1"\n')
    s = load(path, env={}).settings
    eps = endpoints(s, env={"LAB_KEY": "sk-1"})
    assert [e.name for e in eps] == ["lab", "cloud"]
    assert eps[0].api_key == "sk-1" and eps[0].price_in == 1e-7 and eps[0].root == "http://127.0.0.1:8080"
    assert prices(s, eps[0]).server_in == 1e-7
    with pytest.raises(ConfigError, match="LAB_KEY, which is not set"):
        endpoints(s, env={})


@pytest.mark.parametrize("text, why", [
    ('[servers.lab]\nmodel = "x"\n', "needs url"),
    ('[servers.lab]\nurl = "ftp://x"\n', "needs url"),
    ('[servers.lab]\nurl = "http://x/v1"\nprice_in = -1\n', "price_in = -1 is not allowed"),
    ('[servers.lab]\nurl = "http://x/v1"\napi_key = "sk-secret"\n', "api_key = 'sk-secret' is not allowed"),
    ('servers = 3\n', "expected tables"),
])
def test_bad_servers_are_one_line(tmp_path, text, why):
    with pytest.raises(ConfigError, match=why) as exc:
        load(write(tmp_path, text), env={})
    assert "\n" not in str(exc.value)


def test_saving_a_server_keeps_the_others(tmp_path):
    path = write(tmp_path, '[servers.lab]\nurl = "http://127.0.0.1:8080/v1"\n')
    save_changes(path, {"servers": {"cloud": {"url": "https://api.example.com/v1"}}})
    assert set(load(path, env={}).settings.servers) == {"lab", "cloud"}


def test_the_footer_says_which_endpoint_served():
    from app.tui.metrics import footer_text
    from memory.models import ResponseStats

    line = footer_text(ResponseStats(new_tokens=9, ttft_ms=80.0, method="vanilla",
                                     served_by="device 4 tok → lab 5 tok (migrated by text)"))
    assert "served by device 4 tok → lab 5 tok (migrated by text)" in line
    assert "served by" not in footer_text(ResponseStats(new_tokens=9, method="vanilla", served_by=""))
