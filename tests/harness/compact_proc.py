"""A compaction of every shard of a directory in a process of its own, as ``noon compact`` runs
one, that reports what it cost or stops itself where a test kills it.

``python -m tests.harness.compact_proc DIR HISTORY [--stop-in copy|rename] [--chunk BYTES]``

Without ``--stop-in`` it prints, as JSON, the most memory the compaction held at once (Python
allocations, traced) and the reports. ``--stop-in copy`` stops it (SIGSTOP)
once the first chunk of a shard's new copy is written; ``--stop-in rename`` just before the
copy replaces the shard (under the shard's lock): a test SIGKILLs it there.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from noon.store import compact
from noon.store.shard import list_shards


def _stopping(act: Callable[..., Any], what: str) -> Callable[..., Any]:
    @functools.wraps(act)
    def stop_then_act(*args: Any) -> Any:
        result = act(*args)
        print(f"stopping after {what}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)  # the test kills it here; it never resumes
        return result

    return stop_then_act


def _stopping_before_rename(replace: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(replace)
    def stop_then_replace(source: Any, target: Any) -> Any:
        if str(source).endswith(compact.COPY_SUFFIX):
            print(f"stopping before renaming {source}", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        return replace(source, target)

    return stop_then_replace


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", type=Path)
    ap.add_argument("history", type=int)
    ap.add_argument("--stop-in", choices=("copy", "rename"))
    ap.add_argument("--chunk", type=int, help="bytes read or written at a time")
    args = ap.parse_args()
    if args.chunk:
        compact.CHUNK = args.chunk
    if args.stop_in == "copy":
        compact.write_all = _stopping(compact.write_all, "a chunk of the copy")
    elif args.stop_in == "rename":
        os.replace = _stopping_before_rename(os.replace)
    tracemalloc.start()
    reports = compact.compact_dir(args.dir, list_shards(args.dir), history=args.history)
    _, peak = tracemalloc.get_traced_memory()
    print(
        json.dumps(
            {
                "peak_bytes": peak,
                "reports": [
                    {"shard": r.shard, "before": r.before, "after": r.after, "done": r.done}
                    for r in reports
                ],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
