"""Where the fold of each shard stands: the cursors the read model keeps in its ``shards``
table (a reader placed at one, one saved after a fold), the corrupt lines met on the way, and
the bytes folded so far, told to a progress callback."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from noon.store.readmodel.shardcheck import head_mark, still_same
from noon.store.shard import Corrupt, ShardReader

log = logging.getLogger("noon.readmodel")

Cursor = tuple[str, int, int, int, bytes, bytes]
"""(shard, inode, offset, line, tail mark, head mark) as saved in ``shards``."""
State = tuple[int, int, int, bytes]
"""A reader's position: (inode, offset, line, tail mark)."""


def cursor_of(row: Sequence[Any]) -> Cursor:
    """The cursor of a row of :data:`~.unfolded.SHARDS`."""
    return (row[0], row[1], row[2], row[3], bytes(row[4]), bytes(row[5]))


def position(reader: ShardReader) -> State:
    return (reader.inode, reader.offset, reader.line, reader.tail_mark)


def place(reader: ShardReader, state: State) -> None:
    reader.inode, reader.offset, reader.line, reader.tail_mark = state


def reader_at(directory: Path, name: str, cursor: Cursor | None) -> ShardReader:
    """A reader positioned at the cursor, if the file still holds the bytes the cursor saw
    there; otherwise one that will read it again from the start as rewritten."""
    path = directory / name
    reader = ShardReader(path)
    if cursor is None:
        return reader
    _, inode, offset, line, tail_mark, head = cursor
    if still_same(path, inode, offset, tail_mark, head):
        place(reader, (inode, offset, line, tail_mark))
    else:
        place(reader, (-2, 0, 0, b""))
    return reader


def save(
    conn: sqlite3.Connection,
    directory: Path,
    name: str,
    reader: ShardReader,
    size: int,
    *,
    partway: bool = False,
) -> None:
    """Save where ``reader`` stands in the shard ``name`` of ``size`` bytes. ``partway``: the
    shard holds more than was folded (a chunk of a catch-up), so the next refresh must not find
    it unchanged, even if this process stops here."""
    path = directory / name
    try:
        st = os.lstat(path)
        same = st.st_ino == reader.inode and st.st_size == size and not partway
        mtime = st.st_mtime_ns if same else -1
        head = head_mark(path, reader.offset)
    except FileNotFoundError:
        mtime, head = -1, b""
    conn.execute(
        "INSERT OR REPLACE INTO shards VALUES (?,?,?,?,?,?,?,?)",
        (name, reader.inode, reader.offset, reader.line, reader.tail_mark, head, size, mtime),
    )


def forget(conn: sqlite3.Connection, name: str) -> None:
    """The shard ``name`` is gone: its cursor and the corrupt lines met in it go too."""
    conn.execute("DELETE FROM shards WHERE name = ?", (name,))
    conn.execute("DELETE FROM corrupt WHERE shard = ?", (name,))


def record_corrupt(conn: sqlite3.Connection, found: list[Corrupt]) -> None:
    """Keep the corrupt lines a poll met, each logged the first time it is met."""
    for bad in found:
        new = conn.execute(
            "INSERT OR IGNORE INTO corrupt VALUES (?,?,?,?)",
            (bad.shard, bad.line, bad.reason, bad.excerpt),
        ).rowcount
        if new:
            log.warning("corrupt line skipped: %s", bad)


class Progress:
    """Bytes of shard files folded so far, told to a progress callback."""

    def __init__(self, total: int, done: int, tell: Callable[[int, int], None] | None) -> None:
        self.total, self.done, self.tell = total, done, tell

    def advance(self, consumed: int) -> None:
        self.done += max(consumed, 0)
        if self.tell is not None:
            self.tell(min(self.done, self.total), self.total)
