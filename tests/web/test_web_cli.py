"""``noon web`` as a command: off loopback it refuses to start without a token one chose (before
binding anything), a bad --listen is named, a token given on the command line guards every
route (with a warning that other accounts can read it), and without one the printed address
carries a new token each start."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.harness.mesh import ROOT, subprocess_env
from tests.harness.page import login, split_address
from tests.harness.web import open_store, seed, web_process

pytestmark = pytest.mark.integration


def noon_web(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "noon", "web", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=subprocess_env(),
    )


def test_off_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    done = noon_web("--listen", "0.0.0.0:0", "--dir", str(tmp_path), "--node-id", "n1")
    assert done.returncode == 1
    assert "needs a token you chose; pass --token or set NOON_TOKEN" in done.stderr
    done = noon_web("--listen", "nonsense", "--dir", str(tmp_path), "--node-id", "n1")
    assert done.returncode == 1 and "--listen wants HOST:PORT" in done.stderr


def get(url: str, **headers: str) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_token_guards_the_page_served_by_the_command(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    seed(store)
    store.close()
    with web_process(tmp_path, "laptop", "--token", "t0ken") as address:
        url, token = split_address(address)
        assert token is None  # a token one chose is not printed
        status, body = get(f"{url}/api/info")
        assert status == 401 and "token" in str(body["error"])
        status, body = get(f"{url}/api/info", Authorization="Bearer t0ken")
        assert status == 200 and body["node"] == "laptop"
        port = url.rsplit(":", 1)[1]
        status, body = get(f"{url}/api/info", Host=f"rebound.example:{port}")
        assert status == 421
    log = tmp_path.with_name(tmp_path.name + ".web.log").read_text()
    assert "a token on the command line is visible to every account of this machine" in log


def test_the_printed_address_carries_a_new_token_that_logs_in(tmp_path: Path) -> None:
    tokens = []
    for run in range(2):  # (two directories: each has its own log to read the address from)
        with web_process(tmp_path / f"run{run}", "laptop") as address:
            url, token = split_address(address)
            assert token is not None and address == f"{url}/#token={token}"
            tokens.append(token)
            assert get(f"{url}/api/info")[0] == 401
            assert get(f"{url}/api/info", Authorization=f"Bearer {token}")[0] == 200
            session = login(url, token)
            assert get(f"{url}/api/info", **{"X-Noon-Session": session})[1]["node"] == "laptop"
    assert tokens[0] != tokens[1]  # a new one each start
