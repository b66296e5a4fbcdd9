"""``noon certs`` and ``noon peers`` against a real daemon using the default file locations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.mesh import ROOT, free_port, noon_command, wait_until

pytestmark = pytest.mark.integration


def noon(command: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return noon_command(command, *args, env=env)


def test_certs_then_daemon_then_peers(tmp_path: Path):
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "NOON_DIR": str(tmp_path / "data"),
        "NOON_NODE_ID": "solo",
        "NOON_CA_DIR": str(tmp_path / "ca"),
        "NOOND_LISTEN": f"127.0.0.1:{port}",
        "NOOND_INTERVAL": "0.2",
    }
    out = noon("certs", "init", env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    assert noon("certs", "init", env=env).returncode != 0  # never overwrites a CA silently
    out = noon("certs", "issue", "solo", env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    assert (tmp_path / "data" / "certs" / "solo.key").stat().st_mode & 0o077 == 0
    out = noon("certs", "issue", "../evil", env=env)
    assert out.returncode != 0 and "invalid node id" in out.stdout + out.stderr

    daemon = subprocess.Popen(
        [sys.executable, "-m", "noond"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def listed() -> dict[str, object] | None:
            got = noon("peers", "list", "--json", env=env)
            data = json.loads(got.stdout) if got.returncode == 0 else None
            return data if data and "candidates" in data else None  # answered by the daemon

        assert wait_until(listed, what="noon peers list via the daemon")["peers"] == []
        out = noon("peers", "depart", "ghost", env=env)
        assert out.returncode == 0, out.stderr
        wait_until(lambda: (listed() or {}).get("departed") == ["ghost"])
        assert noon("peers", "revoke", "solo", env=env).returncode == 1  # not the local node
    finally:
        daemon.terminate()
        assert daemon.wait(timeout=10) == 0


def test_the_commands_find_a_daemon_started_with_listen(tmp_path: Path, pki):
    cert, key, ca = pki.node("solo")
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "NOON_DIR": str(tmp_path / "data"),
        "NOON_NODE_ID": "solo",
        "NOOND_TLS_CERT": str(cert),
        "NOOND_TLS_KEY": str(key),
        "NOOND_TLS_CA": str(ca),
    }
    daemon = subprocess.Popen(
        [sys.executable, "-m", "noond", "--listen", f"127.0.0.1:{port}"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    published = tmp_path / "data" / ".noon" / "noond.address"
    try:
        wait_until(published.exists, what="the daemon to say where it listens")
        assert json.loads(published.read_text())["url"] == f"https://127.0.0.1:{port}"
        out = noon("peers", "list", env=env)  # NOOND_LISTEN is not set: found anyway
        assert out.returncode == 0 and "# from daemon" in out.stdout, out.stdout + out.stderr
        status = noon("status", "--json", env=env)
        assert json.loads(status.stdout)["daemon"]["reachable"] is True, status.stderr
    finally:
        daemon.terminate()
        assert daemon.wait(timeout=10) == 0
    assert not published.exists()
