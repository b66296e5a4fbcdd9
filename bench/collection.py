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

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.collect import collect_dir
from noon.store.store import Store

NS = "default"


def store(d: Path, node: str) -> Store:
    return Store(Settings.from_env({}, dir=d, node_id=node, fsync=False, compact_after=0,
                                   snapshot=False))


def create(s: Store, names: list[str]) -> None:
    s.write(lambda f: [d for n in names for d in (
        Draft(("content", NS, n), {"text": f"memory {n} " * 4}),
        Draft(("edge", NS, "@core", n), {"child": n, "priority": 1, "disclosure": ""}),
    )])


def delete(s: Store, names: list[str]) -> None:
    s.write(lambda f: [d for n in names for d in (
        Draft(("content", NS, n), None), Draft(("edge", NS, "@core", n), None))])


def ops(d: Path, node: str) -> int:
    return len((d / f"{node}.jsonl").read_bytes().splitlines())


def frontier(d: Path) -> dict[str, int]:
    return store(d, "probe").fold.frontier()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    n = ap.parse_args().n
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        a = store(d, "a")
        keep = [f"keep{i}" for i in range(n // 20)]
        gone = [f"gone{i}" for i in range(n)]
        create(a, keep)
        for i in range(0, n, 100):
            create(a, gone[i:i + 100])
        for i in range(0, n, 100):
            delete(a, gone[i:i + 100])
        create(a, ["tail"])
        before = ops(d, "a")
        everyone = frontier(d)
        t = time.perf_counter()
        collect_dir(d, self_id="a", reports={"b": everyone, "c": everyone}, admitted="bc")
        took = time.perf_counter() - t
        rows.append(("every member saw everything", before, ops(d, "a"), took,
                     "P06/P08 node1: 5304 -> 254 (20.9x)"))

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        a = store(d, "a")
        known = [f"known{i}" for i in range(n)]
        for i in range(0, n, 100):
            create(a, known[i:i + 100])
        c_report = frontier(d)  # c's last report: it saw every 'known' memory, then left
        new = [f"new{i}" for i in range(n)]
        for i in range(0, n, 100):
            create(a, new[i:i + 100])
        for i in range(0, n, 100):
            delete(a, known[i:i + 100])
            delete(a, new[i:i + 50])
        create(a, ["tail"])
        before = ops(d, "a")
        now = frontier(d)
        t = time.perf_counter()
        away = collect_dir(d, self_id="a", reports={"b": now, "c": c_report}, admitted="bc",
                           away={"c"})
        took = time.perf_counter() - t
        rows.append(("c away, NOOND_COLLECT_UNSEEN (frozen "
                     f"{len(away.kept)})", before, ops(d, "a"), took,
                     "P10 window: unknown set collected, 4000 known frozen"))
        mid = ops(d, "a")
        t = time.perf_counter()
        collect_dir(d, self_id="a", reports={"b": now, "c": now}, admitted="bc")
        took = time.perf_counter() - t
        rows.append(("c back and caught up", mid, ops(d, "a"), took,
                     "P10 rejoin node1: 14254 -> 6254 (2.3x)"))
    print(f"{'scenario':<44} {'ops before':>10} {'after':>7} {'factor':>8} {'collect':>9}"
          "   reference")
    for name, b, a_, took, ref in rows:
        print(f"{name:<44} {b:>10} {a_:>7} {b / a_:>7.1f}x {took * 1000:>7.0f}ms   {ref}")


if __name__ == "__main__":
    main()
