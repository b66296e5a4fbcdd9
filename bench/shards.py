"""Stores written straight as shard lines, the way a replica arrives from a peer: fast enough to
build a million ops in seconds, so the benchmarks spend their time measuring, not building.

The lines are what ``Store.write`` would append for the same drafts (seq, a hybrid-clock stamp,
the batch mark ``bat``, ``by``), for elements written once: no ``prev``. Nothing is folded
here; the first reader of the directory folds them (which is what some benchmarks measure).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from noon.core.ops import Draft, encode
from noon.names import shard_file

DAY_MS = 86_400_000


class ShardWriter:
    """Appends batches of drafts to ``<node>.jsonl`` in ``directory``, continuing the seqs and
    stamps of what it wrote before (a new writer starts a shard that does not exist yet)."""

    def __init__(self, directory: Path, node: str, by: str = "bench") -> None:
        self.path = directory / shard_file(node)
        if self.path.exists():
            raise FileExistsError(f"{self.path} exists: a writer starts a new shard")
        self.path.touch()
        self.node = node
        self.by = by
        self.seq = 0
        self.stamp = (time.time_ns() // 1_000_000 - DAY_MS) << 16
        """A day ago, so no stamp is ahead of a reader's clock."""

    def batch(self, drafts: Iterable[Draft]) -> int:
        """Append ``drafts`` as one batch (one ``write``); the number of ops written."""
        todo = list(drafts)
        last = self.seq + len(todo)
        bat = last if len(todo) > 1 else None
        lines = []
        for draft in todo:
            self.seq += 1
            self.stamp += 1
            lines.append(
                encode(
                    node=self.node,
                    seq=self.seq,
                    hlc=self.stamp,
                    el=draft.el,
                    val=draft.val,
                    prev=None if isinstance(draft.prev, str) else draft.prev,  # AUTO
                    by=self.by,
                    bat=bat,
                )
            )
        with open(self.path, "ab") as f:
            f.write(b"".join(line + b"\n" for line in lines))
        return len(lines)


def ops_in(directory: Path) -> int:
    """Lines (ops) in every shard of ``directory``."""
    return sum(len(p.read_bytes().splitlines()) for p in directory.glob("*.jsonl"))
