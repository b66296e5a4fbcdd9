"""The page (``noon web``) on a large store: time to first render of the tree and of a memory,
and the page server's memory.

    python -m bench.web [--memories 10000] [--repeats 20]

Builds a store of N memories (100 topics under ``core://``, N/100 memories each, as
:mod:`bench.uri_latency` does), starts a real ``noon web`` process and measures:

- *HTTP*: the wall time of the requests the page makes before it can draw, one after the
  other on one keep-alive connection as a browser's first load would: for the tree, the page,
  its stylesheet and script modules, ``/api/info``, ``/api/domains``, the review badge and the
  first 100 children of ``core://``; for a memory, ``/api/memory``; plus the first 100 of a
  topic's N/100 children and the first page of the review queue. ``cold`` is the first time
  after the server started (what the first visitor waits), then p50/p99 over ``repeats``.
- *browser* (when Chromium and Playwright are installed): from navigation to the tree's first
  rows drawn, and to a memory's text drawn, in headless Chromium.
- the server's start (process start to listening: loading the store) and its RSS after all.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.mesh import ROOT, wait_until
from bench.stats import percentiles, rss_mib
from bench.uri_latency import build, ops_in

ASSETS = [
    "/static/app.css",
    "/static/js/app.js",
    "/static/js/api.js",
    "/static/js/dom.js",
    "/static/js/browse.js",
    "/static/js/tree.js",
    "/static/js/memory.js",
]


def _get(conn: http.client.HTTPConnection, path: str, token: str) -> bytes:
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"GET {path}: {resp.status} {body[:200]!r}")
    return body


def _timed(port: int, token: str, paths: list[str]) -> float:
    """Milliseconds to fetch ``paths`` one after the other on one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        t0 = time.perf_counter()
        for path in paths:
            _get(conn, path, token)
        return (time.perf_counter() - t0) * 1000
    finally:
        conn.close()


def _series(port: int, token: str, paths: list[str], repeats: int) -> dict[str, float]:
    cold = _timed(port, token, paths)
    return {"cold": cold, **percentiles([_timed(port, token, paths) for _ in range(repeats)])}


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


def _browser(url: str, token: str, memory: str) -> dict[str, float] | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    executable = chromium()
    if executable is None:
        return None
    out: dict[str, float] = {}
    keep = f"localStorage.setItem('noon-session', {json.dumps(login(url, token))})"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            for name, path, drawn in (
                ("tree_ms", "/#/browse", '[role="treeitem"][data-uri="core://topic0"]'),
                ("memory_ms", f"/#/browse?uri={memory}", "article.memory .body"),
            ):
                page = browser.new_page()  # a new page: nothing cached from the last one
                page.add_init_script(keep)  # logged in, as a page opened before would be
                page.set_default_timeout(120_000)
                t0 = time.perf_counter()
                page.goto(url + path)
                page.locator(drawn).wait_for()
                out[name] = (time.perf_counter() - t0) * 1000
        finally:
            browser.close()
    return out


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


def measure(directory: Path, memories: int, repeats: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    with web_server(directory, "bench") as (address, proc):
        started = time.perf_counter() - t0
        url, token = split_address(address)
        assert token is not None
        bound = int(url.rsplit(":", 1)[1])
        per = max(1, memories // 100)
        memory = f"core://topic50/m{per // 2}"
        tree = ["/", *ASSETS, "/api/info", "/api/domains"]
        tree += ["/api/changes?view=pending&limit=1", "/api/children?uri=core://&limit=100"]
        result: dict[str, Any] = {
            "memories": memories,
            "ops": ops_in(directory),
            "start_s": started,
            "tree_http_ms": _series(bound, token, tree, repeats),
            "memory_http_ms": _series(bound, token, [f"/api/memory?uri={memory}"], repeats),
            "topic_children_http_ms": _series(
                bound, token, ["/api/children?uri=core://topic50&limit=100"], repeats
            ),
            "review_http_ms": _series(bound, token, ["/api/changes?limit=30"], repeats),
        }
        result["browser"] = _browser(url, token, memory)
        result["rss_mib"] = rss_mib(proc.pid)
        return result


def run(memories: int, repeats: int = 20) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="noon-bench-web-") as tmp:
        d = Path(tmp) / "store"
        d.mkdir()
        t0 = time.perf_counter()
        build(d, memories)
        built = time.perf_counter() - t0
        return {**measure(d, memories, repeats), "build_s": built}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument(
        "--dir", type=Path, help="measure a store built before (by bench.uri_latency.build)"
    )
    args = ap.parse_args()
    if args.dir:
        print(json.dumps(measure(args.dir, args.memories, args.repeats), indent=1))
    else:
        print(json.dumps(run(args.memories, args.repeats), indent=1))


if __name__ == "__main__":
    main()
