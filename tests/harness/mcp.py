"""Shared helpers for the MCP tests: a store in a temp dir, a server, a notification recorder,
and a ``noon serve`` subprocess speaking Streamable HTTP."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types

from noon.config import Settings
from noon.store.store import Store
from tests.harness.mesh import ROOT, subprocess_env

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
"""A raw Streamable HTTP ``initialize`` request (opens a session)."""
POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def tool_text(result: types.CallToolResult) -> str:
    """The text a tool answered (every tool of noon answers in one text block first)."""
    first = result.content[0]
    assert isinstance(first, types.TextContent), first
    return first.text


def resource_text(result: types.ReadResourceResult) -> str:
    """The text of a resource read (noon's resources are text)."""
    first = result.contents[0]
    assert isinstance(first, types.TextResourceContents), first
    return first.text


def serve_env(**extra: str) -> dict[str, str]:
    """The environment of a ``noon serve`` subprocess, without a token unless one is given."""
    env = subprocess_env(**extra)
    if "NOON_TOKEN" not in extra:
        env.pop("NOON_TOKEN", None)
    return env


def make_settings(d: Path, node: str = "n1", namespace: str = "default") -> Settings:
    return Settings.from_env({}, dir=d, node_id=node, namespace=namespace)


def make_store(d: Path, node: str = "n1") -> Store:
    return Store(make_settings(d, node))


class Recorder:
    """Collects notifications a client receives; ``wait`` polls with a bounded deadline."""

    def __init__(self) -> None:
        self.got: list[Any] = []

    async def __call__(self, message: Any) -> None:
        self.got.append(message)

    def updated(self) -> list[str]:
        return [
            str(m.params.uri) for m in self.got if isinstance(m, types.ResourceUpdatedNotification)
        ]

    async def wait(self, pred: Callable[[], bool], timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while not pred():
                await anyio.sleep(0.02)


class ServeProcess:
    """A ``noon serve --http`` process whose stderr is drained in the background (a server that
    logs a lot must never block on a full pipe) and kept for the test to read."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, seen: list[str]) -> None:
        self.proc = proc
        self.url = url
        self._lines = seen
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._lock:
                self._lines.append(raw.decode(errors="replace"))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        with self._lock:
            return "".join(self._lines)


@contextmanager
def serve_process(
    args: list[str], env: dict[str, str] | None = None, host: str = "127.0.0.1"
) -> Iterator[ServeProcess]:
    """Run ``noon serve --http HOST:0 ...``; yield it once it listens."""
    bind = f"[{host}]:0" if ":" in host else f"{host}:0"
    proc = subprocess.Popen(
        [sys.executable, "-m", "noon", "serve", "--http", bind, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or subprocess_env(),
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 20
        url = None
        seen: list[str] = []
        assert proc.stderr is not None
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline().decode()
            if not line and proc.poll() is not None:
                break
            seen.append(line)
            m = re.search(r"serving MCP on (http://\S+)", line)
            if m:
                url = m.group(1)
        assert url, f"noon serve did not start: {''.join(seen)}"
        yield ServeProcess(proc, url, seen)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def http_server(args: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``noon serve --http 127.0.0.1:0 ...``; yield its MCP URL once it listens."""
    with serve_process(args, env) as served:
        yield served.url
