"""A reader sees a tombstone collection whole or not at all.

Collection removes a deleted element's ops from several shards, one rename each. Had a reader
read shard ``a`` before the rename that removed version X from it, and shard ``b`` after the
rename that removed the delete naming X, it would hold X and nothing naming it: a deleted
memory shown again, and a store never forgets an op it folded, so for that session's whole life.
A crash between two renames would leave the same state on disk.

So a collection first writes the ids of every op it is about to remove to a journal
(``.noon/collecting.json``), then renames the shards, then deletes the journal. While the
journal exists every reader leaves those ops out of its fold, whatever mixture of old and new
shard files it reads: it sees the state after the collection. A crash leaves the journal in
place, and the next collection finishes its removal before anything else.

The journal must not appear or vanish while a reader goes round the shards (it would filter
the first shards it read with one journal and the last with another), so readers hold
``.noon/cut.lock`` shared while they read every shard once (``Store.refresh``, and
``Store.write``, which refreshes) and a collection holds it exclusively only to write or delete
the journal: a moment, never the renames.

Lock order, everywhere: the maintenance lock, then this one, then a shard's lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from noon.core.ops import OpId
from noon.store.private import make_dir
from noon.store.shard import fsync_dir, open_regular, read_regular, write_file

MAX_JOURNAL = 1 << 32
"""A journal larger than this was not written by a collection."""


def cut_lock_path(directory: Path) -> Path:
    return directory / ".noon" / "cut.lock"


def journal_path(directory: Path) -> Path:
    return directory / ".noon" / "collecting.json"


def _open(path: Path) -> int | None:
    """The lock file's descriptor, or None where it cannot be created (a read-only directory:
    nothing can collect there either). Its directory is made only when missing: every read
    and write opens the lock, and ``.noon`` is there nearly always."""
    try:
        try:
            return open_regular(path, os.O_RDWR | os.O_CREAT)
        except FileNotFoundError:
            make_dir(path.parent)
            return open_regular(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return None
        raise


@contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    fd = _open(cut_lock_path(directory))
    if fd is None:
        raise PermissionError(f"cannot create {cut_lock_path(directory)}")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def begin(directory: Path, ops: Iterable[OpId]) -> None:
    """Journal the ops a collection is about to remove (durably, atomically)."""
    body = orjson.dumps({"ops": sorted(ops)})
    with _exclusive(directory):
        write_file(journal_path(directory), body)


def end(directory: Path) -> None:
    """The journalled ops are gone from every shard: readers need not leave them out."""
    with _exclusive(directory):
        journal_path(directory).unlink(missing_ok=True)
        fsync_dir(directory / ".noon")


def pending(directory: Path) -> frozenset[OpId]:
    """The ops of an unfinished collection (empty when none is under way)."""
    try:
        raw = read_regular(journal_path(directory), MAX_JOURNAL)
    except FileNotFoundError:
        return frozenset()
    return frozenset((str(n), int(s)) for n, s in orjson.loads(raw)["ops"])


class ReadCut:
    """A reader's shared hold, and the journal as it was when the hold began. Re-entrant
    within one owner (``Store`` nests a refresh inside a write); not thread-safe on its own:
    the store calls it under its own lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = cut_lock_path(directory)
        self._journal = journal_path(directory)
        self.hidden: frozenset[OpId] = frozenset()
        """Ops to leave out of the fold: those of a collection under way."""
        self._fd: int | None = None
        self._depth = 0
        self.ident: tuple[int, int, int] | None = None
        """The journal file as last loaded (inode, size, mtime), or None when there is none."""

    @contextmanager
    def held(self) -> Iterator[None]:
        if self._depth == 0:
            self._fd = _open(self._lock)
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_SH)
            self._load_journal()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _load_journal(self) -> None:
        try:
            st = os.lstat(self._journal)
        except FileNotFoundError:
            self.hidden, self.ident = frozenset(), None
            return
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
        if ident != self.ident:
            self.hidden, self.ident = pending(self.directory), ident
