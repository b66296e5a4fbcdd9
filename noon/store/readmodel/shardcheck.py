"""What the read model reads of shard files beside the fold: whether the file a cursor was saved
on is still that file, and where the two versions of a forked op sit (for the message)."""

from __future__ import annotations

import os
from pathlib import Path

from noon.core.fold import ForkError
from noon.core.ops import decode
from noon.store.shard import list_shards, read_regular

HEAD = 4096


def head_mark(path: Path, offset: int) -> bytes:
    """The first bytes of a shard (up to its cursor), kept beside the cursor. One ``pread`` on a
    plain descriptor: a buffered file object costs more to build than the read (every fold
    saves a cursor)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, min(HEAD, offset), 0)
    finally:
        os.close(fd)


def still_same(path: Path, inode: int, offset: int, tail: bytes, head: bytes) -> bool:
    """Whether the file is still the one a cursor was saved on: same inode, at least as long,
    and the same bytes at its start and just before the cursor (a file copied over in place
    keeps its inode, not its bytes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if st.st_ino != inode or st.st_size < offset:
            return True  # the reader sees the rename or the shrink itself
        return (
            os.pread(fd, len(tail), offset - len(tail)) == tail
            and os.pread(fd, len(head), 0) == head
        )
    finally:
        os.close(fd)


MAX_SHARD_READ = 1 << 34
"""Bytes of a shard read whole to name the places of a fork."""


def describe_fork(directory: Path, exc: ForkError) -> str:
    places = []
    for name in list_shards(directory):
        try:
            text = read_regular(directory / name, MAX_SHARD_READ)
        except OSError:
            continue
        for no, raw in enumerate(text.split(b"\n"), 1):
            if f'"seq":{exc.seq}'.encode() not in raw:
                continue
            try:
                op = decode(raw)
            except ValueError:
                continue
            if op.id == (exc.node, exc.seq):
                places.append(f"{name}:{no} (digest {op.digest:016x})")
    if len(places) < 2:
        places.append("what this machine read of it before (`noon reindex` forgets that)")
    return (
        f"forked shard: operation {exc.node}:{exc.seq} exists in two different versions, "
        f"at {' and '.join(places)}. Two "
        f"writers used node id {exc.node!r} (a restored backup or a copied NOON_NODE_ID). Stop "
        "them, keep the shard that is right, move the other out of NOON_DIR, and give every "
        "machine its own NOON_NODE_ID. noon refuses to merge until then."
    )
