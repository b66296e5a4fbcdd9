"""``noon web`` as a command: off loopback it refuses to start without a token (before binding
anything), a bad --listen is named, and a token given on the command line guards every route."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bench.mesh import ROOT, subprocess_env
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
    assert "needs a token; pass --token or set NOON_TOKEN" in done.stderr
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
    with web_process(tmp_path, "laptop", "--token", "t0ken") as url:
        status, body = get(f"{url}/api/info")
        assert status == 401 and "token" in str(body["error"])
        status, body = get(f"{url}/api/info", Authorization="Bearer t0ken")
        assert status == 200 and body["node"] == "laptop"
        port = url.rsplit(":", 1)[1]
        status, body = get(f"{url}/api/info", Host=f"rebound.example:{port}")
        assert status == 421


def test_the_address_announced_accepts_connections_before_the_page_serves() -> None:
    """``noon web`` prints its address once the socket listens: a client that connects at
    once waits in the backlog instead of being refused while the server starts."""
    import socket

    from noon.web.command import listening_socket

    sock = listening_socket("127.0.0.1", 0)
    try:
        with socket.create_connection(sock.getsockname(), timeout=5):
            pass  # no accept has run: the kernel queued it
    finally:
        sock.close()
