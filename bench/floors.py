"""Physical floors measured on this machine in the same run: what no implementation on it can
beat. fsync latency bounds durable writes and the loopback round trip anything that crosses a
socket, and importing the MCP SDK a new session's first answer (decoding the same JSON bytes,
the floor of a fold, is measured in ``bench.core``)."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.core import fsync_floor
from bench.stats import percentiles


def loopback_rtt(rounds: int = 2000) -> dict[str, float]:
    """Round trip of a 64-byte message over a TCP connection on 127.0.0.1, in microseconds."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while data := conn.recv(64):
                conn.sendall(data)

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    samples = []
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(rounds):
            t0 = time.perf_counter()
            c.sendall(b"x" * 64)
            got = 0
            while got < 64:
                got += len(c.recv(64 - got))
            samples.append((time.perf_counter() - t0) * 1e6)
    thread.join(5)
    server.close()
    return percentiles(samples)


def sdk_import(runs: int = 3) -> float:
    """Seconds for a fresh Python to start and import the MCP SDK's server as published
    (``import mcp.server.lowlevel``, which runs the package's ``__init__``: the SDK's client
    side too): a new session's first answer, as the issues set it (best of ``runs``)."""
    return _started("import mcp.server.lowlevel", runs)


SERVER_SIDE = """
from noon.codecache import cache_file, compiled_once
with compiled_once(cache_file("bench.floors")):
    from noon.mcp.sdk_import import load_server_side
    load_server_side()
"""


def sdk_server_import(runs: int = 3) -> float:
    """Seconds for a fresh Python to start and import the MCP SDK's server side the way
    ``noon serve`` does (:func:`noon.mcp.sdk_import.load_server_side`: neither the SDK's client
    nor its HTTP side; the code :mod:`noon.codecache` keeps read back): what a session's start
    cannot go below with this SDK, about half of :func:`sdk_import` (best of ``runs``, after
    one that fills the cache)."""
    return _started(SERVER_SIDE, runs + 1)


def _started(code: str, runs: int) -> float:
    # Bytecode and code cache as a session has them (bench.kg_latency.noon_client): where
    # PYTHONDONTWRITEBYTECODE is set, neither would ever be written.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        best = min(best, time.perf_counter() - t0)
    return best


def measure(fsyncs: int = 1000, imports: int = 3) -> dict[str, Any]:
    per_s = fsync_floor(fsyncs)
    return {
        "fsync_per_s": per_s,
        "fsync_us": 1e6 / per_s,
        "loopback_rtt_us": loopback_rtt(),
        "sdk_import_s": sdk_import(imports),
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    node = (
        subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
        if shutil.which("node")
        else None
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gib": round(ram, 1),
        "python": sys.version.split()[0],
        "kernel": platform.release(),
        "os": platform.system(),
        "node": node.stdout.strip() if node else None,
    }
