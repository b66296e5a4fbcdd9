"""What a compaction costs beside the shard it rewrites: the memory of the process that
compacts (its Python allocations at their peak, traced), the disk it needs beyond the shards
(the new copy of what the shard keeps), and the read model's catching up afterwards (its
write-ahead log at its largest, sampled every 5 ms, and its file). The anchor is the shard's
own size, in the same run.

    python -m bench.compaction_cost --memories 5000 --versions 3 --history 0
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.readmodel_size import build
from noon.config import Settings
from noon.store.compact import COPY_SUFFIX, compact_dir
from noon.store.readmodel.schema import FILE_NAME
from noon.store.shard import list_shards
from noon.store.store import Store


class Peak:
    """The largest size a file reached, sampled on a thread of its own."""

    def __init__(self, path: Path) -> None:
        self.path, self.bytes, self._stop = path, 0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            with contextlib.suppress(FileNotFoundError):
                self.bytes = max(self.bytes, self.path.stat().st_size)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.bytes


def _open(d: Path) -> None:
    Store(Settings.from_env({}, dir=d, node_id="bench", fsync=False)).close()


def child(d: Path, history: int) -> None:
    """Compact every shard of ``d`` in this process; print the most memory it held at once
    (Python allocations, traced: the process's peak RSS is mostly the import's) and its RSS."""
    copy = Peak(d / f".bench.jsonl{COPY_SUFFIX}")
    tracemalloc.start()
    reports = compact_dir(d, list_shards(d), history=history)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "traced_peak": peak,
                "rss_peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "copy_bytes_sampled": copy.stop(),
                "ops": [(r.before, r.after) for r in reports],
            }
        )
    )


def run(memories: int, versions: int, history: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="noon-bench-compact-") as name:
        d = Path(name)
        build(d, memories, versions)
        _open(d)
        shard = d / "bench.jsonl"
        before = shard.stat().st_size
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "bench.compaction_cost", "--child", str(d), str(history)],
            capture_output=True,
            text=True,
            check=True,
        )
        took = time.perf_counter() - start
        cost = json.loads(out.stdout)
        model = d / ".noon" / FILE_NAME
        wal = Peak(Path(f"{model}-wal"))
        _open(d)
        return {
            "shard_bytes_before": before,
            "shard_bytes_after": shard.stat().st_size,
            "ops_before_after": cost["ops"],
            "compaction_s": round(took, 2),
            "compaction_memory_traced_peak_bytes": cost["traced_peak"],
            "compaction_process_rss_peak_kib": cost["rss_peak_kib"],
            "copy_bytes_sampled": cost["copy_bytes_sampled"],
            "readmodel_bytes": model.stat().st_size,
            "readmodel_wal_peak_bytes": wal.stop(),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=5000)
    ap.add_argument("--versions", type=int, default=3)
    ap.add_argument("--history", type=int, default=0)
    ap.add_argument("--child", nargs=2, metavar=("DIR", "HISTORY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]))
        return
    print(json.dumps(run(args.memories, args.versions, args.history), indent=1))


if __name__ == "__main__":
    main()
