"""Every performance figure of noon in one run, each beside its anchor or physical floor.

    python -m bench.run            # default sizes, a few minutes on 2 cores
    python -m bench.run --large    # 50k entities, 100k memories, 1M ops, 10-node mesh

Prints one table, writes ``bench/results/latest.json`` (figures, raw measurements, machine
description) and PNG plots beside it; ``python -m bench.readme_section`` turns the results file
into ``docs/performance.md``. The ratio column is a cost ratio, noon ÷ anchor for times and
bytes and anchor ÷ noon for rates: below 1 noon beats the anchor; against a floor it is the
distance from the limit (at least 1).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import collection, core, floors, kg_latency, noond_mesh, uri_latency, web
from bench.rows import Row, build_rows, format_table

RESULTS = Path(__file__).resolve().parent / "results"

SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "kg": [50],
        "kg_calls": 3,
        "memories": 200,
        "first_answer_ops": [1000],
        "core": [12_000],
        "appends": 100,
        "uri_calls": 3,
        "mesh": [3],
        "writes": 5,
        "mcp_calls": 20,
        "catch_up": 500,
        "idle_exchanges": 6,
        "imports": 1,
        "collection": 200,
        "web_repeats": 3,
    },
    "default": {
        "kg": [1000, 10_000],
        "kg_calls": 50,
        "memories": 10_000,
        "first_answer_ops": [100_000],
        "core": [100_000],
        "appends": 1000,
        "uri_calls": 50,
        "mesh": [3, 5],
        "writes": 100,
        "mcp_calls": 500,
        "catch_up": 100_000,
        "idle_exchanges": 60,
        "imports": 3,
        "collection": 2000,
        "web_repeats": 20,
    },
    "large": {
        "kg": [1000, 10_000, 50_000],
        "kg_calls": 50,
        "memories": 100_000,
        "first_answer_ops": [100_000, 1_000_000],
        "core": [100_000, 1_000_000],
        "appends": 2000,
        "uri_calls": 50,
        "mesh": [3, 5, 10],
        "writes": 200,
        "mcp_calls": 500,
        "catch_up": 1_000_000,
        "idle_exchanges": 100,
        "imports": 3,
        "collection": 2000,
        "web_repeats": 20,
    },
}
"""``mcp_calls`` create_entities calls of one entity and one observation = 2 ops each, so the
default writes 1000 ops, as server-noonien's propagation run did."""


def _step(name: str, fn: Callable[[], Any]) -> Any:
    print(f"[bench] {name} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    value = fn()
    print(f"[bench] {name} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return value


def measure(size: str) -> dict[str, Any]:
    """Run every benchmark at one of :data:`SIZES`; the raw measurements by section."""
    s = SIZES[size]
    started = time.perf_counter()
    load_before = os.getloadavg()
    raw: dict[str, Any] = {}
    raw["floors"] = _step("floors", lambda: floors.measure(s["appends"], s["imports"]))
    raw["core"] = _step("store", lambda: core.measure(s["core"], s["appends"]))
    raw["kg"] = _step("knowledge-graph tools", lambda: kg_latency.run(s["kg"], s["kg_calls"]))
    raw["uri"] = _step(
        "URI tools", lambda: uri_latency.run(s["memories"], s["first_answer_ops"], s["uri_calls"])
    )
    raw["collection"] = _step("tombstone collection", lambda: collection.measure(s["collection"]))
    raw["web"] = _step("web page", lambda: web.run(s["memories"], s["web_repeats"]))
    with tempfile.TemporaryDirectory(prefix="noon-bench-") as tmp:
        raw["mesh"] = _step(
            "noond mesh",
            lambda: noond_mesh.run(
                Path(tmp),
                s["mesh"],
                s["writes"],
                s["mcp_calls"],
                s["catch_up"],
                s["idle_exchanges"],
            ),
        )
    return {
        "size": size,
        "parameters": s,
        "machine": floors.machine(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "duration_s": time.perf_counter() - started,
        "raw": raw,
        "load_average": {"before": load_before[0], "after": os.getloadavg()[0]},
    }


def write_results(results: dict[str, Any], out: Path, plots: bool = True) -> list[Row]:
    rows = build_rows(results["raw"])
    results["rows"] = [r.as_dict() for r in rows]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if plots:
        from bench.plots import plot_all  # matplotlib is optional: pip install .[bench]

        plot_all(results, out.parent)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--large", action="store_true", help="the big sizes (tens of minutes)")
    group.add_argument("--tiny", action="store_true", help="a smoke run (seconds)")
    ap.add_argument("--out", type=Path, default=RESULTS / "latest.json")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    size = "large" if args.large else "tiny" if args.tiny else "default"
    results = measure(size)
    rows = write_results(results, args.out, plots=not args.no_plots)
    m = results["machine"]
    print(
        f"noon benchmarks ({size}) on {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB, "
        f"Python {m['python']}, Linux {m['kernel']}; {results['duration_s']:.0f} s; load "
        f"average {results['load_average']['before']:.1f} before, "
        f"{results['load_average']['after']:.1f} after"
    )
    print(format_table(rows))
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
