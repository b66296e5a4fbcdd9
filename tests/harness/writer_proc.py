"""A writer process for multi-process and crash tests: appends batches and prints each
acknowledged batch as ``ack <first seq> <last seq> <tag>`` on stdout, flushed."""

from __future__ import annotations

import sys
from pathlib import Path

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.compact import compact_dir
from noon.store.store import Store
from tests.harness.stores import plan_of


def main() -> None:
    directory, node, tag, batches, compact_every = sys.argv[1:6]
    store = Store(Settings.from_env({}, dir=Path(directory), node_id=node, compact_after=0))
    for i in range(int(batches)):
        size = 1 + i % 3
        drafts = [
            Draft(("content", "default", f"{tag}-{i}-{j}"), {"text": f"{tag} {i} {j}"})
            for j in range(size)
        ] + [Draft(("content", "default", "shared"), {"text": f"{tag} {i}"})]
        ops = store.write(plan_of(drafts), client=tag)
        print(f"ack {ops[0].seq} {ops[-1].seq} {tag}-{i}", flush=True)
        every = int(compact_every)
        if every and i % every == every - 1:
            compact_dir(store.dir, [store.own.name], history=0)


if __name__ == "__main__":
    main()
