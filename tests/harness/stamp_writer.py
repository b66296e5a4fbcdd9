"""A long-lived writer process driven over stdin: each line ``write <tag>`` appends one op to
the node's shard and prints ``ack <seq> <hlc>``, flushed; end of input ends it. Tests run
several of these on one node, under a wall clock they move (libfaketime)."""

from __future__ import annotations

import sys
from pathlib import Path

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.store import Store
from tests.harness.stores import plan_of


def main() -> None:
    directory, node = sys.argv[1:3]
    store = Store(Settings.from_env({}, dir=Path(directory), node_id=node, compact_after=0))
    print("ready", flush=True)
    for line in sys.stdin:
        _, tag = line.split()
        draft = Draft(("content", "default", tag), {"text": tag})
        ops = store.write(plan_of([draft]), client=tag)
        print(f"ack {ops[-1].seq} {ops[-1].hlc}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
