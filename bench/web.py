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
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.stats import percentiles, rss_mib
from bench.uri_latency import build, ops_in
from tests.harness.page import CHROMIUM_ARGS, chromium, login, split_address, web_server

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
