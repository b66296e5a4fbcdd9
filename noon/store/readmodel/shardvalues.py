"""Op values the read model does not copy: read back from the author's shard, by the byte offset
of the op's line.

A value of :data:`~noon.store.readmodel.rows.PACK_MIN` bytes or more (a memory's text, an
observation) is not stored in ``ops``: the row keeps where its line starts in its author's shard
(``at``; the fold folds an author's ops from that author's shard only), and SQL reads it with
``op_val(val, node, at, digest)`` (:func:`register`). The line found there must have the digest
folded, so a value is never read from the wrong line: after a compaction or a collection moved
the lines (until the fold of the rewritten shard records their new offsets, in the transaction
that reads it again), the line is looked for in the shard by its digest. A line no longer in
the shard (a version compacted away that the model has not let go of yet) has no value:
:func:`noon.store.readmodel.rows.op_of` says to read again.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import orjson

from noon.core.ops import MAX_LINE, line_digest
from noon.names import shard_file
from noon.store.shard import open_regular

_FIRST_READ = 16 << 10
_SCAN_CHUNK = 1 << 20


class ShardValues:
    """``op_val`` for one directory of shards."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def __call__(self, val: str | None, node: str, at: int | None, digest: int) -> str | None:
        if at is None or self.directory is None:
            return val
        try:
            fd = open_regular(self.directory / shard_file(node))
        except OSError:
            return None
        try:
            raw = _line_at(fd, at)
            if raw is None or _signed(line_digest(raw)) != digest:
                raw = _line_with(fd, digest)
        finally:
            os.close(fd)
        if raw is None:
            return None
        return orjson.dumps(orjson.loads(raw).get("val")).decode()


def _signed(digest: int) -> int:
    return digest - (1 << 64) if digest >= 1 << 63 else digest


def _line_at(fd: int, at: int) -> bytes | None:
    """The complete line that starts at ``at`` (without its newline), or None."""
    data = os.pread(fd, _FIRST_READ, at)
    while b"\n" not in data:
        if len(data) > MAX_LINE:
            return None
        more = os.pread(fd, max(len(data), _FIRST_READ), at + len(data))
        if not more:
            return None
        data += more
    return data[: data.index(b"\n")]


def _line_with(fd: int, digest: int) -> bytes | None:
    """The line of the shard whose digest is ``digest`` (the lines moved), read in chunks."""
    carry, offset = b"", 0
    while True:
        data = os.pread(fd, _SCAN_CHUNK, offset)
        if not data:
            return None
        offset += len(data)
        lines = (carry + data).split(b"\n")
        carry = lines.pop()
        for raw in lines:
            if _signed(line_digest(raw)) == digest:
                return raw


def register(conn: sqlite3.Connection, directory: Path | None) -> None:
    """``op_val(val, node, at, digest)``: an ``ops`` row's value as JSON text."""
    conn.create_function("op_val", 4, ShardValues(directory))
