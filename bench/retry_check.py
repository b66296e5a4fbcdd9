"""What recognising retries costs a write: ``Store.write`` of one op with a request key (it looks
for the key among the ops written in the last 10 minutes, before planning and, when the shard
moved meanwhile, under the lock) beside the same write without one (the anchor), alternating in
one run, on a shard that already holds ``--recent`` ops written within the window.

    python -m bench.retry_check [--recent 0 20000] [--writes 300]

fsync is off so the figure is the check's, not the disk's.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.stats import percentiles
from noon.config import Settings
from noon.core.elements import content_key
from noon.core.ops import Draft
from noon.store.retries import requesting
from noon.store.store import Store
from tests.harness.stores import plan_of

NS = "default"
BATCH = 1000


def measure(directory: Path, recent: int, writes: int) -> dict[str, Any]:
    store = Store(Settings.from_env({}, dir=directory, node_id="bench", fsync=False))
    try:
        for start in range(0, recent, BATCH):
            drafts = [
                Draft(content_key(NS, f"m{i}"), {"text": f"memory {i} " + "words " * 30})
                for i in range(start, min(recent, start + BATCH))
            ]
            store.write(plan_of(drafts))
        keyed: list[float] = []
        plain: list[float] = []
        for i in range(writes):
            draft = [Draft(content_key(NS, f"w{i}"), {"text": f"write {i}"})]
            t0 = time.perf_counter()
            store.write(plan_of(draft))
            plain.append((time.perf_counter() - t0) * 1000)
            draft = [Draft(content_key(NS, f"k{i}"), {"text": f"keyed {i}"})]
            t0 = time.perf_counter()
            with requesting(f"{i:032x}"):
                store.write(plan_of(draft))
            keyed.append((time.perf_counter() - t0) * 1000)
        shard = (directory / "bench.jsonl").stat().st_size
    finally:
        store.close()
    return {
        "recent_ops": recent,
        "shard_bytes": shard,
        "write_ms": percentiles(plain),
        "keyed_write_ms": percentiles(keyed),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recent", type=int, nargs="+", default=[0, 20000])
    parser.add_argument("--writes", type=int, default=300)
    args = parser.parse_args(argv)
    out = []
    for recent in args.recent:
        with tempfile.TemporaryDirectory() as tmp:
            out.append(measure(Path(tmp), recent, args.writes))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
