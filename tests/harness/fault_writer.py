"""A writer process for the nemesis: writes, overwrites and deletes random keys of a small key
space through :meth:`Store.write` and prints one JSON line per acknowledged batch on stdout
(flushed) *after* ``write`` returned. Only what is printed counts as acknowledged.

``python -m tests.harness.fault_writer DIR NODE TAG SEED KEYS PAUSE_MS COMPACT_EVERY``
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.compact import compact_dir
from noon.store.readmodel.graph import SqlGraph
from noon.store.store import ForkDetected, ShardBehind, Store, StoreError


def plan_for(rng: random.Random, tag: str, i: int, keys: int):
    """A random batch: one or a few writes, or a delete of a live key."""
    picked = sorted({f"k{rng.randrange(keys)}" for _ in range(rng.choice((1, 1, 1, 2, 3)))})
    delete = rng.random() < 0.25

    def plan(graph: SqlGraph) -> list[Draft]:
        drafts = []
        for name in picked:
            key = ("content", "default", name)
            el = graph.element(key)
            if delete and el is not None and not el.deleted:
                drafts.append(Draft(key, None))
            else:
                drafts.append(Draft(key, {"text": f"{tag} {i} {name}"}))
        return drafts

    return plan


def main() -> int:
    directory, node, tag, seed, keys, pause_ms, compact_every = sys.argv[1:8]
    rng = random.Random(f"{seed}/{tag}")
    store = Store(
        Settings.from_env({}, dir=Path(directory), node_id=node, compact_after=0, fsync=False)
    )
    every = int(compact_every)
    i = 0
    while True:
        plan = plan_for(rng, tag, i, int(keys))
        try:
            ops = store.write(plan, client=tag)
        except ForkDetected as exc:
            print(f"writer {tag}: {exc}", file=sys.stderr, flush=True)
            return 3
        except (ShardBehind, StoreError, OSError) as exc:
            # Behind (the daemon is recovering the shard) or a full disk: not acknowledged,
            # try again shortly.
            print(f"writer {tag}: not written: {exc}", file=sys.stderr, flush=True)
            time.sleep(0.1)
            store = Store(store.settings)
            continue
        print(
            json.dumps(
                {
                    "ops": [
                        [
                            op.node,
                            op.seq,
                            list(op.el),
                            op.val is not None,
                            [list(p) for p in op.prev or ()],
                        ]
                        for op in ops
                    ]
                }
            ),
            flush=True,
        )
        i += 1
        if every and i % every == 0:
            try:
                compact_dir(store.dir, [store.own.name], history=rng.choice((0, 1, 3)))
            except OSError as exc:
                print(f"writer {tag}: compaction failed: {exc}", file=sys.stderr, flush=True)
        time.sleep(int(pause_ms) / 1000 * rng.random())  # pacing, not synchronisation


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
