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
import subprocess
import sys
import tempfile
import time
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


def _get(conn: http.client.HTTPConnection, path: str) -> bytes:
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"GET {path}: {resp.status} {body[:200]!r}")
    return body


def _timed(port: int, paths: list[str]) -> float:
    """Milliseconds to fetch ``paths`` one after the other on one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        t0 = time.perf_counter()
        for path in paths:
            _get(conn, path)
        return (time.perf_counter() - t0) * 1000
    finally:
        conn.close()


def _series(port: int, paths: list[str], repeats: int) -> dict[str, float]:
    cold = _timed(port, paths)
    return {"cold": cold, **percentiles([_timed(port, paths) for _ in range(repeats)])}


def _browser(url: str, memory: str) -> dict[str, float] | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    chromium = "/usr/bin/chromium"
    if not os.access(chromium, os.X_OK):
        return None
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
    args += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    out: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=args)
        try:
            page = browser.new_page()
            page.set_default_timeout(120_000)
            t0 = time.perf_counter()
            page.goto(f"{url}/#/browse")
            page.locator('[role="treeitem"][data-uri="core://topic0"]').wait_for()
            out["tree_ms"] = (time.perf_counter() - t0) * 1000
            page2 = browser.new_page()
            page2.set_default_timeout(120_000)
            t0 = time.perf_counter()
            page2.goto(f"{url}/#/browse?uri={memory}")
            page2.locator("article.memory .body").wait_for()
            out["memory_ms"] = (time.perf_counter() - t0) * 1000
        finally:
            browser.close()
    return out


def measure(directory: Path, memories: int, repeats: int) -> dict[str, Any]:
    log = directory.with_name(directory.name + ".web.log")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NOON_FSYNC": "false"}
    t0 = time.perf_counter()
    with open(log, "wb") as out:
        command = ["web", "--listen", "127.0.0.1:0", "--dir", str(directory), "--node-id", "bench"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "noon", *command],
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
    try:

        def port() -> int | None:
            if proc.poll() is not None:
                raise RuntimeError(f"noon web exited: {log.read_text()[-2000:]}")
            m = re.search(r"serving the page on http://127\.0\.0\.1:(\d+)/", log.read_text())
            return int(m.group(1)) if m else None

        bound = wait_until(port, timeout=600, what="noon web to listen")
        started = time.perf_counter() - t0
        per = max(1, memories // 100)
        memory = f"core://topic50/m{per // 2}"
        tree = ["/", *ASSETS, "/api/info", "/api/domains"]
        tree += ["/api/changes?view=pending&limit=1", "/api/children?uri=core://&limit=100"]
        result: dict[str, Any] = {
            "memories": memories,
            "ops": ops_in(directory),
            "start_s": started,
            "tree_http_ms": _series(bound, tree, repeats),
            "memory_http_ms": _series(bound, [f"/api/memory?uri={memory}"], repeats),
            "topic_children_http_ms": _series(
                bound, ["/api/children?uri=core://topic50&limit=100"], repeats
            ),
            "review_http_ms": _series(bound, ["/api/changes?limit=30"], repeats),
        }
        result["browser"] = _browser(f"http://127.0.0.1:{bound}", memory)
        result["rss_mib"] = rss_mib(proc.pid)
        return result
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
