"""The page in real processes: a ``noon web`` on a free loopback port, the address it prints,
the session its token buys, and the system's Chromium for a browser. Shared by the page's tests
and :mod:`bench.web`."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.harness.mesh import ROOT, wait_until

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Flags for the system's Chromium under Playwright (never a browser Playwright downloads)."""


def chromium() -> str | None:
    """The system's Chromium (Debian's ``chromium`` package), if installed."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def split_address(address: str) -> tuple[str, str | None]:
    """The base URL and the token of the address ``noon web`` printed
    (``http://127.0.0.1:7708/#token=...``, or without the fragment for a token one chose)."""
    base, _, fragment = address.partition("#")
    token = fragment[len("token=") :] if fragment.startswith("token=") else None
    return base.rstrip("/"), token


def login(base: str, token: str) -> str:
    """The session ``POST /api/login`` trades ``token`` for (what the page keeps)."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=60)
    try:
        body = json.dumps({"token": token})
        conn.request("POST", "/api/login", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        if resp.status != 200:
            raise RuntimeError(f"login refused: {resp.status} {answer}")
        return str(answer["session"])
    finally:
        conn.close()


EXITED = "exited"


@contextmanager
def web_server(
    directory: Path, node: str, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A ``noon web`` process on ``directory`` listening on a free loopback port: yields the
    address it printed (with ``#token=...`` unless a token was given; see
    :func:`split_address`) and the process; stops it afterwards. Its log goes to
    ``<directory>.web.log``."""
    log = directory.with_name(directory.name + ".web.log")
    command = ["web", "--listen", "127.0.0.1:0", "--dir", str(directory), "--node-id", node]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "noon", *command, *args],
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env=env or {**os.environ, "PYTHONPATH": str(ROOT), "NOON_FSYNC": "false"},
        )
    try:

        def started() -> str | None:
            m = re.search(r"serving the page on (http://\S+)", log.read_text())
            if m:
                return m.group(1)
            return EXITED if proc.poll() is not None else None

        url = wait_until(started, timeout=600, what="noon web to listen")
        if url == EXITED:  # (an exception would only make wait_until try again)
            raise RuntimeError(f"noon web exited: {log.read_text()[-2000:]}")
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
