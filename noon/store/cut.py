"""The cut lock: a reader sees a tombstone collection whole or not at all.

Collection removes a deleted element from several shards in passes, oldest versions first
(:mod:`noon.store.collect`), so every state between two renames folds exactly as before. A
reader, though, reads the shards one after another: had it read shard ``a`` before a pass removed
version X from it and shard ``b`` after a later pass removed the delete naming X, it would hold X
and nothing naming it, a deleted memory shown again. And a store never forgets an op it folded,
so that session would show it until it ends.

So a reader holds this lock *shared* while it reads every shard once (``Store.refresh``, and
``Store.write``, which refreshes), and a collection holds it *exclusively* while it renames
shards. Compaction and the re-fetch of a replica need not hold it: each of their renames is safe
on its own (what they drop is named by something that stays in the same file or in no file).

Lock order, everywhere: the maintenance lock, then this one, then a shard's lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cut_lock_path(directory: Path) -> Path:
    return directory / ".noon" / "cut.lock"


def _open(directory: Path) -> int | None:
    """The lock file's descriptor, or None where it cannot be created (a read-only directory:
    nothing can collect there either)."""
    path = cut_lock_path(directory)
    try:
        path.parent.mkdir(exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return None
        raise


@contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """Held by a collection while it renames shards."""
    fd = _open(directory)
    if fd is None:
        raise PermissionError(f"cannot create {cut_lock_path(directory)}")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class ReadCut:
    """A reader's shared hold, re-entrant within one owner (``Store`` nests a refresh inside a
    write). Not thread-safe on its own: the store calls it under its own lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd: int | None = None
        self._depth = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        if self._depth == 0:
            self._fd = _open(self.directory)
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_SH)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                os.close(self._fd)
                self._fd = None
