"""What this node collected, so that a shard that loses part of its file never brings it back.

Tombstone collection removes a deleted element's ops from every shard here. If one of those
shards is later damaged (deleted, truncated: a disk that failed, a careless restore) and pulled
again from a peer that has not collected the element yet, its versions would come back without
the deletes that lived in *other* shards, which this node removed too and will never receive
again (their seqs are below its cursors): a deleted memory shown again (PROTOCOL.md §11.5).

So before it removes anything, a collection records the keys of the elements it removes and
the frontier it saw (the highest seq held per author), in ``.noon/collected.jsonl``. An op that
arrives later on such a key at or below that frontier for its author belongs to what was
collected: every such op was held then (replication moves by seq cursor), or its author's
compaction had dropped it as superseded before it could arrive. It is not stored again.

Ops above the frontier pass: a later write on the element (a new version naming the
tombstones, or a new genesis by a member that never saw it) shows as it would have anyway.

One op is always stored again: an author's op at its *floor*, the highest frontier recorded
for it. That op was this node's last op of the author when the collection ran, and the last op
of an author is never removed (it keeps the seq high-water mark), so storing it restores what
was there; it is also what brings the shard's head back where it was. Hence a damaged shard is
pulled again only from a peer that holds it up to the floor at least (``noond`` waits for one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import orjson

from noon.core.ops import Key, Op
from noon.store.private import make_dir
from noon.store.shard import fsync_dir, open_regular, read_regular

MAX_LEDGER = 1 << 32
"""A ledger larger than this was not written by noon (one line per collection)."""


def ledger_path(directory: Path) -> Path:
    return directory / ".noon" / "collected.jsonl"


class Forgotten:
    """The collected keys and, per key, the highest frontier any collection of it saw."""

    def __init__(self) -> None:
        self.frontiers: dict[Key, dict[str, int]] = {}
        self.floor: dict[str, int] = {}
        """Per author, the highest frontier any collection recorded."""

    def covers(self, op: Op) -> bool:
        """True when ``op`` belongs to what this node collected: never store it again."""
        frontier = self.frontiers.get(op.el)
        return (
            frontier is not None
            and op.seq <= frontier.get(op.node, 0)
            and op.seq < self.floor.get(op.node, 0)
        )

    def add(self, keys: Iterable[Key], frontier: Mapping[str, int]) -> None:
        for node, seq in frontier.items():
            if seq > self.floor.get(node, 0):
                self.floor[node] = seq
        for key in keys:
            mine = self.frontiers.setdefault(key, {})
            for node, seq in frontier.items():
                if seq > mine.get(node, 0):
                    mine[node] = seq


def record(directory: Path, keys: Iterable[Key], frontier: Mapping[str, int]) -> None:
    """Append one collection's keys and frontier, durably, before anything is removed."""
    keys = sorted(set(keys))
    if not keys:
        return
    path = ledger_path(directory)
    make_dir(path.parent)
    created = not path.exists()
    line = (
        orjson.dumps({"frontier": dict(sorted(frontier.items())), "keys": [list(k) for k in keys]})
        + b"\n"
    )
    fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a line torn by a crash: end it, so this one stays whole
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)


_cache: dict[Path, tuple[tuple[int, int, int], Forgotten]] = {}


def load(directory: Path) -> Forgotten:
    """The ledger of ``directory`` (cached while the file is unchanged). A line torn by a crash
    while it was appended is ignored: its collection removed nothing yet."""
    path = ledger_path(directory)
    try:
        st = os.lstat(path)
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = _cache.get(path)
        if cached is not None and cached[0] == ident:
            return cached[1]
        data = read_regular(path, MAX_LEDGER)
    except FileNotFoundError:
        _cache.pop(path, None)
        return Forgotten()
    forgotten = Forgotten()
    for raw in data.splitlines():
        try:
            entry = orjson.loads(raw)
            frontier = {str(n): int(s) for n, s in entry["frontier"].items()}
            keys = [tuple(str(p) for p in k) for k in entry["keys"]]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            continue
        forgotten.add(keys, frontier)
    _cache[path] = (ident, forgotten)
    return forgotten
