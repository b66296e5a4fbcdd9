"""Issue 26 item 10: "serving on ..." is said only once the listener listens. A client that
connects at the moment the line is printed (inside the write that prints it, before the command
goes on: ``tests/harness/connect_on_line.py``), once and without a retry loop, is answered: by
``noon web`` (the page) and by ``noon serve --http`` (MCP)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration


def first_answer(args: list[str], **env: str) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.harness.connect_on_line", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=subprocess_env(**env),
    )
    try:
        assert proc.stdout is not None
        return proc.stdout.readline().decode().strip()  # ends at the first answer, or at exit
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_noon_web_answers_a_client_connecting_as_it_says_it_serves(tmp_path: Path) -> None:
    args = ["web", "--listen", "127.0.0.1:0", "--dir", str(tmp_path), "--node-id", "n1"]
    assert first_answer(args, NOON_TOKEN="a-token-for-this-test") == "answered 200"


def test_noon_serve_http_answers_a_client_connecting_as_it_says_it_serves(
    tmp_path: Path,
) -> None:
    args = ["serve", "--http", "127.0.0.1:0", "--dir", str(tmp_path), "--node-id", "n1"]
    assert first_answer(args) == "answered 200"
