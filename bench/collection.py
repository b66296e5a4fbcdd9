"""Tombstone collection: shard sizes before and after, beside server-noonien's published shrink
factors (reference §7.3, Table 7), and the time collection takes once the last needed report
is in (in noond it runs right after the round whose exchange brought that report).

Run: ``.venv/bin/python -m bench.collection [--n 2000]``. Each memory is two ops (its text and
its placement); deleting it adds two tombstones, as the URI tools do.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.collect import collect_dir
from noon.store.store import Store

NS = "default"


def store(d: Path, node: str) -> Store:
    return Store(Settings.from_env({}, dir=d, node_id=node, fsync=False, compact_after=0))


def create(s: Store, names: list[str]) -> None:
    s.write(
        lambda f: [
            d
            for n in names
            for d in (
                Draft(("content", NS, n), {"text": f"memory {n} " * 4}),
                Draft(("edge", NS, "@core", n), {"child": n, "priority": 1, "disclosure": ""}),
            )
        ]
    )


def delete(s: Store, names: list[str]) -> None:
    s.write(
        lambda f: [
            d
            for n in names
            for d in (Draft(("content", NS, n), None), Draft(("edge", NS, "@core", n), None))
        ]
    )


def ops(d: Path, node: str) -> int:
    return len((d / f"{node}.jsonl").read_bytes().splitlines())


def frontier(d: Path) -> dict[str, int]:
    return store(d, "probe").fold.frontier()


def measure(n: int) -> list[dict[str, Any]]:
    """The three scenarios: ops in the authored shard before and after collection, its time,
    and the reference figure of server-noonien it compares with (factor None: no factor)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        a = store(d, "a")
        keep = [f"keep{i}" for i in range(n // 20)]
        gone = [f"gone{i}" for i in range(n)]
        create(a, keep)
        for i in range(0, n, 100):
            create(a, gone[i : i + 100])
        for i in range(0, n, 100):
            delete(a, gone[i : i + 100])
        create(a, ["tail"])
        before = ops(d, "a")
        everyone = frontier(d)
        t = time.perf_counter()
        collect_dir(d, self_id="a", reports={"b": everyone, "c": everyone}, admitted="bc")
        took = time.perf_counter() - t
        rows.append(
            _row(
                "every member saw everything",
                before,
                ops(d, "a"),
                took,
                "P06/P08 node1: 5304 -> 254 (20.9x)",
                20.9,
            )
        )

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        a = store(d, "a")
        known = [f"known{i}" for i in range(n)]
        for i in range(0, n, 100):
            create(a, known[i : i + 100])
        c_report = frontier(d)  # c's last report: it saw every 'known' memory, then left
        new = [f"new{i}" for i in range(n)]
        for i in range(0, n, 100):
            create(a, new[i : i + 100])
        for i in range(0, n, 100):
            delete(a, known[i : i + 100])
            delete(a, new[i : i + 50])
        create(a, ["tail"])
        before = ops(d, "a")
        now = frontier(d)
        t = time.perf_counter()
        away = collect_dir(
            d, self_id="a", reports={"b": now, "c": c_report}, admitted="bc", away={"c"}
        )
        took = time.perf_counter() - t
        rows.append(
            _row(
                f"c away, NOOND_COLLECT_UNSEEN (frozen {len(away.kept)})",
                before,
                ops(d, "a"),
                took,
                "P10 window: unknown set collected, 4000 known frozen",
                None,
            )
        )
        mid = ops(d, "a")
        t = time.perf_counter()
        collect_dir(d, self_id="a", reports={"b": now, "c": now}, admitted="bc")
        took = time.perf_counter() - t
        rows.append(
            _row(
                "c back and caught up",
                mid,
                ops(d, "a"),
                took,
                "P10 rejoin node1: 14254 -> 6254 (2.3x)",
                2.3,
            )
        )
    return rows


def _row(
    name: str, before: int, after: int, took: float, reference: str, factor: float | None
) -> dict[str, Any]:
    return {
        "scenario": name,
        "before": before,
        "after": after,
        "factor": before / after,
        "collect_s": took,
        "reference": reference,
        "reference_factor": factor,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    rows = measure(ap.parse_args().n)
    print(
        f"{'scenario':<44} {'ops before':>10} {'after':>7} {'factor':>8} {'collect':>9}   reference"
    )
    for r in rows:
        print(
            f"{r['scenario']:<44} {r['before']:>10} {r['after']:>7} {r['factor']:>7.1f}x "
            f"{r['collect_s'] * 1000:>7.0f}ms   {r['reference']}"
        )


if __name__ == "__main__":
    main()
