"""``hexa npu`` through the real CLI (``app.cli.main``), offline: without a token or a network the
user gets one line and exit status 2 within 2 seconds (qai_hub alone would retry for ~47 s); with
a good configuration, ``devices`` lists what a local stand-in for AI Hub's API answers, through
qai_hub's real client, and AI Hub's own errors arrive as one line. Nothing reaches AI Hub."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from app.cli import npu as cli_npu
from app.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
              "NO_PROXY", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


def write_ini(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def api_ini(tmp_path: Path, api_url: str, token: str = "t0ken") -> Path:
    return write_ini(tmp_path / "client.ini", f"[api]\napi_token = {token}\napi_url = {api_url}\nweb_url = {api_url}\n")


def hexa_npu(argv: list[str], capsys) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - t0
    out, err = capsys.readouterr()
    return code, out, err, seconds


def one_line_within_2s(argv, capsys) -> str:
    code, out, err, seconds = hexa_npu(argv, capsys)
    assert code == 2 and out == "" and seconds < 2.0, (code, out, err, seconds)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hexa: "), err
    return lines[0]


def free_port() -> int:
    """A local port nothing listens on: connections to it are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_configuration_is_read_where_qai_hub_reads_it(monkeypatch):
    from qai_hub import api_utils, public_rest_api

    assert cli_npu.CONFIG_ENV == api_utils.QAIHUB_CLIENT_ENV
    assert cli_npu.DEFAULT_API_URL == public_rest_api.DEFAULT_HUB_API_URL
    monkeypatch.delenv(cli_npu.CONFIG_ENV, raising=False)
    assert api_utils.get_config_path() == os.path.expanduser(cli_npu.DEFAULT_CONFIG)


@pytest.mark.parametrize("content, words", [
    (None, "does not exist"),
    ("[api]\napi_url = https://workbench.aihub.qualcomm.com\n", "has no api_token"),
    ("[api]\napi_token =   \n", "has no api_token"),
    ("api_token = abc\n", "cannot read"),                 # no [api] section header
])
@pytest.mark.parametrize("command", [["npu", "devices"], ["npu", "compile", "--device", "Samsung Galaxy S24"],
                                     ["npu", "profile", "--device", "Samsung Galaxy S24"]])
def test_without_a_token_one_line_within_2_seconds(tmp_path, monkeypatch, capsys, content, words, command):
    ini = tmp_path / "client.ini"
    if content is not None:
        write_ini(ini, content)
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
    line = one_line_within_2s(command, capsys)
    assert words in line and str(ini) in line and "qai-hub configure --api_token" in line


def test_without_a_network_one_line_within_2_seconds(tmp_path, monkeypatch, capsys):
    silent = socket.socket()           # accepts connections (the kernel's backlog), never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        cases = [(f"https://127.0.0.1:{free_port()}", "connection refused"),
                 (f"https://127.0.0.1:{silent.getsockname()[1]}", "no answer"),
                 ("https://10.255.255.1", ""),                      # not routable (or a filter's answer)
                 ("https://hub.invalid", "")]                       # a name that never resolves (RFC 6761)
        for url, words in cases:
            monkeypatch.setenv("QAIHUB_CLIENT_INI", str(api_ini(tmp_path, url)))
            line = one_line_within_2s(["npu", "devices"], capsys)
            assert line.startswith(f"hexa: cannot reach Qualcomm AI Hub at {urlparse(url).hostname}:")
            assert words in line and "api_url in" in line
    finally:
        silent.close()


def test_the_check_goes_through_the_https_proxy(tmp_path, monkeypatch, capsys):
    """requests tunnels https through HTTPS_PROXY: the check asks that proxy, as requests would."""
    seen = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def proxy():
        conn, _ = server.accept()
        with conn:
            seen.append(conn.recv(4096))
            conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=proxy, daemon=True)
    thread.start()
    monkeypatch.setenv("HTTPS_PROXY", f"http://me:s%40cret@127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(api_ini(tmp_path, "https://workbench.aihub.qualcomm.com")))
    try:
        line = one_line_within_2s(["npu", "devices"], capsys)
    finally:
        server.close()
    assert "through the proxy 127.0.0.1" in line and "407 Proxy Authentication Required" in line
    assert seen[0].startswith(b"CONNECT workbench.aihub.qualcomm.com:443 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic bWU6c0BjcmV0\r\n" in seen[0]          # me:s@cret


def test_a_good_configuration_passes_the_check(tmp_path, monkeypatch):
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(1)
    try:
        url = f"http://127.0.0.1:{listening.getsockname()[1]}"
        ini = write_ini(tmp_path / "c.ini", f"[api]\napi_token = abc%def\napi_url = {url}\n")
        monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
        login = cli_npu.hub_login()
    finally:
        listening.close()
    assert login == cli_npu.HubLogin(ini, "abc%def", url, url, None)


def test_the_whole_command_answers_within_2_seconds_without_loading_qai_hub(tmp_path):
    """In a fresh process, interpreter start included: the check runs before qai_hub (about a
    second to import) or torch."""
    ini = api_ini(tmp_path, f"https://127.0.0.1:{free_port()}")
    script = ("import sys, time; t0 = time.perf_counter(); from app.cli import main; code = main(['npu', 'devices']); "
              "print(code, 'qai_hub' in sys.modules, 'torch' in sys.modules, file=sys.stdout)")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       env={**{k: v for k, v in os.environ.items() if k not in PROXY_VARS},
                            "QAIHUB_CLIENT_INI": str(ini)})
    seconds = time.perf_counter() - t0
    assert r.stdout.split() == ["2", "False", "False"], (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "connection refused" in r.stderr
    assert seconds < 2.0


def test_npu_usage_errors_are_one_line():
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["npu", "compile"])
    assert info.value.code == 2
    args = build_parser().parse_args(["npu", "profile", "--device", "Snapdragon X Elite CRD", "--context", "512"])
    assert args.func is cli_npu.cmd_profile and args.device == "Snapdragon X Elite CRD"
    assert args.setting_context == "512" and args.uses_settings


class FakeHubApi(BaseHTTPRequestHandler):
    """The one AI Hub endpoint ``hexa npu devices`` calls, answered as AI Hub does (protobuf)."""

    def do_GET(self):
        from qai_hub import public_api_pb2 as api_pb

        url = urlparse(self.path)
        if self.headers.get("Authorization") != "token good":
            body = json.dumps({"detail": "Invalid token."}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
        elif url.path == "/api/v1/devices/":
            name = parse_qs(url.query).get("name", [""])[0]
            devices = api_pb.DeviceList()
            for dev_name, os_, attrs in [
                ("Samsung Galaxy S24", "14", ["chipset:qualcomm-snapdragon-8gen3", "hexagon:v75", "soc-model:57",
                                              "htp-supports-weight-sharing:true", "framework:qnn"]),
                ("Snapdragon X Elite CRD", "11", ["chipset:qualcomm-snapdragon-x-elite", "hexagon:v73",
                                                  "htp-supports-weight-sharing:true", "soc-model:60"]),
                ("Apple iPhone 15 Pro", "17", ["chipset:apple-a17-pro", "framework:coreml"])]:
                if not name or name == dev_name:
                    devices.devices.add(name=dev_name, os=os_, attributes=attrs)
            body = devices.SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
        else:
            body = b""
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHubApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_devices_are_listed_through_qai_hubs_client(tmp_path, monkeypatch, capsys, fake_hub):
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(api_ini(tmp_path, fake_hub, token="good")))
    code, out, err, _ = hexa_npu(["npu", "devices"], capsys)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["Samsung Galaxy S24", "Snapdragon X Elite CRD"]
    assert "qualcomm-snapdragon-8gen3" in lines[0] and "hexagon v75" in lines[0] and "soc 57" in lines[0]
    assert lines[1].endswith("weight sharing yes")


def test_ai_hub_refusing_the_token_is_one_line(tmp_path, monkeypatch, capsys, fake_hub):
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(api_ini(tmp_path, fake_hub, token="expired")))
    code, out, err, _ = hexa_npu(["npu", "devices"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("hexa: Qualcomm AI Hub: Failed to authenticate.") and "bad or expired API token" in err


@pytest.mark.parametrize("argv, words", [
    (["npu", "build"], "name the Snapdragon"),
    (["npu", "build", "--soc", "99"], "not a Snapdragon hexa knows"),
])
def test_npu_build_refuses_a_missing_or_unknown_soc_in_one_line(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HEXA_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err, _ = hexa_npu(argv, capsys)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "cache" / "models").exists()      # refused before any model work
