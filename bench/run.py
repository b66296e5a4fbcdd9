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
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    collection,
    core,
    create_latency,
    floors,
    kg_latency,
    kg_scale,
    noond_mesh,
    uri_latency,
    web,
)
from bench.rows import build_rows
from bench.table import Row, failures, format_table
from bench.targets import as_dicts, format_targets, targets

RESULTS = Path(__file__).resolve().parent / "results"

SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "kg": [50],
        "kg_calls": 3,
        "scale": [5000],
        "scale_runs": 1,
        "remote_reads": 5,
        "uri_memories": 200,
        "uri_calls": 3,
        "create": [100, 1000],
        "create_calls": 5,
        "appends": 100,
        "mesh": [3],
        "writes": 5,
        "mcp_calls": 20,
        "catch_up": 500,
        "idle_exchanges": 6,
        "imports": 1,
        "collection": 200,
        "web_memories": 200,
        "web_repeats": 3,
    },
    "default": {
        "kg": [1000, 10_000],
        "kg_calls": 50,
        "scale": [100_000],
        "scale_runs": 3,
        "remote_reads": 20,
        "uri_memories": 50_000,
        "uri_calls": 50,
        "create": [1000, 100_000],
        "create_calls": 30,
        "appends": 1000,
        "mesh": [3, 5],
        "writes": 100,
        "mcp_calls": 500,
        "catch_up": 100_000,
        "idle_exchanges": 60,
        "imports": 3,
        "collection": 2000,
        "web_memories": 10_000,
        "web_repeats": 20,
    },
    "large": {
        "kg": [1000, 10_000, 50_000],
        "kg_calls": 50,
        "scale": [100_000, 1_000_000],
        "scale_runs": 3,
        "remote_reads": 50,
        "uri_memories": 500_000,
        "uri_calls": 50,
        "create": [1000, 100_000],
        "create_calls": 50,
        "appends": 2000,
        "mesh": [3, 5, 10],
        "writes": 200,
        "mcp_calls": 500,
        "catch_up": 1_000_000,
        "idle_exchanges": 100,
        "imports": 3,
        "collection": 2000,
        "web_memories": 100_000,
        "web_repeats": 20,
    },
}
"""``scale``: ops of the knowledge graph both servers hold (issue 17's first answer, RSS,
remote read, import and catch-up fold); ``uri_memories``: the store of the URI tools and
``search_memory``; ``create``: children of the one parent ``create_memory`` writes under.
``mcp_calls`` create_entities calls of one entity and one observation = 2 ops each, so the
default writes 1000 ops, as server-noonien's propagation run did."""


def _step(name: str, fn: Callable[[], Any]) -> Any:
    """Run one section; a section that fails is recorded with its error and the run goes on."""
    print(f"[bench] {name} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        value = fn()
    except Exception as exc:
        traceback.print_exc()
        print(f"[bench] {name} FAILED after {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        return {"error": f"{type(exc).__name__}: {str(exc)[-1000:]}"}
    print(f"[bench] {name} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return value


def measure(size: str) -> dict[str, Any]:
    """Run every benchmark at one of :data:`SIZES`; the raw measurements by section."""
    s = SIZES[size]
    started = time.perf_counter()
    load_before = os.getloadavg()
    raw: dict[str, Any] = {}
    raw["floors"] = _step("floors", lambda: floors.measure(s["appends"], s["imports"]))
    raw["core"] = _step("store", lambda: core.measure(s["appends"]))
    raw["kg_scale"] = _step(
        "knowledge graph at scale, both servers",
        lambda: kg_scale.run(s["scale"], s["scale_runs"], s["remote_reads"]),
    )
    raw["kg"] = _step("knowledge-graph tools", lambda: kg_latency.run(s["kg"], s["kg_calls"]))
    raw["uri"] = _step("URI tools", lambda: uri_latency.run(s["uri_memories"], s["uri_calls"]))
    raw["create"] = _step(
        "create_memory as a parent grows",
        lambda: create_latency.run(s["create"], s["create_calls"]),
    )
    raw["collection"] = _step("tombstone collection", lambda: collection.measure(s["collection"]))
    raw["web"] = _step("web page", lambda: web.run(s["web_memories"], s["web_repeats"]))
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
    results["targets"] = as_dicts(targets(results["raw"]))
    results["failed"] = failures(results["raw"])
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
    print("\nissue 17's targets for the shared read model:")
    print(format_targets(targets(results["raw"])))
    for name, error in results["failed"].items():
        print(f"FAILED section {name}: {error}")
    print(f"results: {args.out}")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
