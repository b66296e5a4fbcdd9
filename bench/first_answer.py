"""A session's first search: how long ``search_memory``'s first call takes in a fresh process
(the model not loaded), the calls made while the model loads in the background, and when
searches become hybrid; beside the same first call with ``NOON_SEMANTIC=off`` (the anchor).

    python -m bench.first_answer [--memories 1000] [--runs 3]

Each run is a new Python process (the model is loaded once per process), on a store of
``--memories`` synthetic memories (:mod:`bench.uri_latency`) built once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stats import percentiles
from bench.uri_latency import build

QUERY = "Which musical instrument does Lena play?"


def child(store_dir: Path) -> dict[str, float]:
    """In a fresh process: the first call, then calls every 50 ms until searches are hybrid
    (or 120 s), each timed."""
    from noon.config import Settings
    from noon.mcp.uri_read import search as search_memory
    from noon.store.access import service
    from noon.store.readmodel.embedder import MODEL, available
    from noon.store.store import Store

    store = Store(Settings.from_env({}, dir=store_dir, node_id="bench", fsync=False))
    svc = service(store)

    def timed() -> float:
        t0 = time.perf_counter()
        svc.read(lambda s: search_memory(s, "default", QUERY, None, 10))
        return (time.perf_counter() - t0) * 1000

    start = time.perf_counter()
    out = {"first_ms": timed()}
    during = []
    while available() and not MODEL.ready and time.perf_counter() - start < 120:
        time.sleep(0.05)  # a paced client, not a wait for a condition: the measure is each call
        during.append(timed())
    if during:
        out["during_load_p50_ms"] = percentiles(during)["p50"]
        out["during_load_max_ms"] = max(during)
    if available():
        out["hybrid_after_s"] = time.perf_counter() - start
        out["first_hybrid_ms"] = timed()
    store.close()
    return out


def run(store_dir: Path, semantic: bool) -> dict[str, float]:
    env = dict(os.environ, NOON_SEMANTIC="on" if semantic else "off")
    done = subprocess.run(
        [sys.executable, "-m", "bench.first_answer", "--child", str(store_dir)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return 0
    with tempfile.TemporaryDirectory(prefix="noon-bench-first-") as d:
        build(Path(d), args.memories)
        for semantic in (False, True):
            for _ in range(args.runs):
                r = run(Path(d), semantic)
                how = "semantic extra on" if semantic else "NOON_SEMANTIC=off"
                print(f"{how}: " + ", ".join(f"{k} {v:.1f}" for k, v in r.items()))
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
