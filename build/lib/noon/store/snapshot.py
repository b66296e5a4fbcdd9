"""A derived, rebuildable snapshot of the folded state, so a new process need not re-fold every
shard before its first answer.

The snapshot records, per shard, the inode, the byte offset read up to, and the first 4 KiB and
the last bytes before that offset. It is used only if every shard it names still exists with the
same inode and the same bytes there; the reader then decodes only what was appended since.
Anything else (a shard rewritten, truncated, replaced or removed, a different noon version) means
the snapshot is ignored and the state is rebuilt from the shards, the only source of truth.

It is a pickle: it lives in the user's own ``NOON_DIR`` (anyone who can write there can also
write the shards) and is never received from the network.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

from noon.core.fold import Fold
from noon.store.shard import ShardReader, write_file

FORMAT = b"noon-snapshot-2\n"


@dataclass
class Cursor:
    inode: int
    offset: int
    line: int
    tail_mark: bytes
    head_mark: bytes


HEAD = 4096


def _head(path: Path, offset: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(min(HEAD, offset))


@dataclass
class Snapshot:
    fold: Fold
    cursors: dict[str, Cursor]
    clock: int


def save(path: Path, fold: Fold, readers: dict[str, ShardReader], clock: int) -> None:
    cursors = {
        name: Cursor(r.inode, r.offset, r.line, r.tail_mark, _head(r.path, r.offset))
        for name, r in readers.items()
    }
    write_file(path, FORMAT + pickle.dumps(Snapshot(fold, cursors, clock), protocol=5))


def load(path: Path, shard_dir: Path) -> tuple[Snapshot, dict[str, ShardReader]] | None:
    """The snapshot and readers positioned at its cursors, or None when it cannot be trusted."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if not data.startswith(FORMAT):
        return None
    try:
        snap = pickle.loads(data[len(FORMAT) :])
    except Exception:  # a damaged or foreign file: the shards are the truth
        return None
    if not isinstance(snap, Snapshot):
        return None
    readers: dict[str, ShardReader] = {}
    for name, c in snap.cursors.items():
        shard = shard_dir / name
        try:
            fd = os.open(shard, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            st = os.fstat(fd)
            mark = os.pread(fd, len(c.tail_mark), c.offset - len(c.tail_mark))
            head = os.pread(fd, len(c.head_mark), 0)
        finally:
            os.close(fd)
        if (
            st.st_ino != c.inode
            or st.st_size < c.offset
            or mark != c.tail_mark
            or head != c.head_mark
        ):
            return None
        r = ShardReader(shard)
        r.inode, r.offset, r.line, r.tail_mark = c.inode, c.offset, c.line, c.tail_mark
        readers[name] = r
    return snap, readers
