"""Compaction: rewrite a shard without the ops that can no longer affect any read.

The decision is the pure :func:`noon.core.compaction.droppable`, made on a fresh read of every
shard under a directory-wide compaction lock (two compactions planning on each other's old files
could each drop the last op naming a version). The rewrite keeps every other line verbatim and
in place (unknown ops, corrupt lines, other authors' ops), goes to a copy beside the shard, and
is swapped in by rename under the shard's own lock after copying whatever was appended
meanwhile, so a concurrent append is never lost and waits only for that short copy. Each run of
dropped lines leaves a stub behind, so the author's signatures still prove what remains
(PROTOCOL.md §13.3).

Bounded in memory and on disk. The plan's read streams each shard :data:`CHUNK` bytes at a
time and keeps, per line, its length and its op without its value (whether an op deletes is
all a plan reads of it): memory grows with the number of ops, never with their bytes. The
rewrite streams the shard again through the stubs into the copy. The disk holds, beyond the
shards, the copy of what one shard keeps (never what it drops, never two copies at once) until
its rename; a copy a crash left behind is removed by the next holder of the compaction lock.
A shard is one file its readers follow by inode and offset (PROTOCOL.md §3), so what a shard
keeps is written once in full before the old file goes: room for less than that would take
shards in segments, a format change.
"""

from __future__ import annotations

import errno
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence, Set
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from sys import intern
from typing import Any, NamedTuple

from noon.core import chain
from noon.core.checkpoint import Checkpoint
from noon.core.compaction import droppable
from noon.core.gcpause import paused as paused_gc
from noon.core.ops import Key, Op, OpError, OpId, decode
from noon.names import shard_node
from noon.store import chainstate
from noon.store.errors import DiskFull
from noon.store.private import FILE_MODE, make_dir
from noon.store.readmodel.behind import free_bytes
from noon.store.shard import fsync_dir, list_shards, locked, open_regular, write_all

CHUNK = 1 << 20
"""Bytes a compaction reads or writes at a time."""
COPY_SUFFIX = ".compacting"
"""A shard's copy being written is ``.<shard><COPY_SUFFIX>`` beside it."""
_LIVE: dict[str, Any] = {}
"""The value a scanned op keeps in place of its own: not a tombstone, nothing more."""


class Line(NamedTuple):
    """A complete line of a shard as a scan keeps it (its bytes are read again to rewrite)."""

    op: Op | None
    """Its op, its value left out; None: a blank or corrupt line."""
    size: int
    """Its length, newline excluded."""
    text: bool
    """It is not blank."""
    signed: bool
    """It carries a signature."""


Scan = tuple[list[Line], int, int]
"""A shard's complete lines, the offset after the last complete line, and the inode read."""


@dataclass(frozen=True)
class CompactReport:
    shard: str
    before: int
    after: int
    corrupt_kept: int
    done: bool = True

    @property
    def dropped(self) -> int:
        return self.before - self.after


def _scan(path: Path) -> Scan:
    """A shard's complete lines (:class:`Line`), the offset just after the last complete line,
    and the inode read; streamed, :data:`CHUNK` bytes at a time."""
    fd = open_regular(path)
    try:
        st = os.fstat(fd)
        lines, end = [], 0
        for raw in _raw_lines(fd, st.st_size):
            end += len(raw) + 1
            lines.append(_line(raw))
    finally:
        os.close(fd)
    return lines, end, st.st_ino


def _line(raw: bytes) -> Line:
    text = bool(raw.strip())
    try:
        op = decode(raw) if text else None
    except OpError:
        op = None
    if op is not None:
        _slim(op)
    return Line(op, len(raw), text, chain.SIG_FIELD in raw)


def _slim(op: Op) -> None:
    """Keep of a scanned op what a plan reads, its strings shared between ops (an element's
    key and an author's id recur on every version): a plan holds every op of the directory."""
    if op.val is not None:
        op.val = _LIVE
    op.node = intern(op.node)
    op.el = tuple(intern(part) for part in op.el)
    if op.prev:
        op.prev = tuple((intern(n), s) for n, s in op.prev)
    op.by = op.via = None


class _Changed(Exception):
    """The shard is not the file the plan read."""


def _raw_lines(fd: int, limit: int) -> Iterator[bytes]:
    """The complete lines (without newline) of the open file ``fd`` in its first ``limit``
    bytes, read :data:`CHUNK` bytes at a time."""
    carry, offset = b"", 0
    while offset < limit:
        data = os.pread(fd, min(CHUNK, limit - offset), offset)
        if not data:
            raise _Changed("it shrank")
        offset += len(data)
        parts = (carry + data).split(b"\n")
        carry = parts.pop()
        yield from parts


@dataclass
class DirScan:
    """Every shard of a directory, read in full: the basis of a compaction or a collection."""

    scans: dict[str, Scan]
    groups: dict[Key, list[Op]]
    arrived: dict[str, int]
    """Highest seq held per author, over every shard."""


def scan_dir(directory: Path) -> DirScan:
    scans: dict[str, Scan] = {}
    with paused_gc():
        for name in list_shards(directory):
            try:
                scans[name] = _scan(directory / name)
            except FileNotFoundError:
                continue
    groups: dict[Key, dict[OpId, Op]] = defaultdict(dict)
    arrived: dict[str, int] = {}
    for lines, _, _ in scans.values():
        for op, *_ in lines:
            if op is not None:
                arrived[op.node] = max(arrived.get(op.node, 0), op.seq)
                if op.known:
                    groups[op.el].setdefault(op.id, op)
    return DirScan(scans, {k: list(v.values()) for k, v in groups.items()}, arrived)


@contextmanager
def maintenance(directory: Path) -> Iterator[None]:
    """The directory-wide lock every compaction and collection holds while it plans and
    rewrites: two planning on each other's old files could each drop the last op naming a
    version, and that version would come back as a head."""
    state = directory / ".noon"
    make_dir(state)
    with locked(state / "compact"):
        _remove_stale_copies(directory)
        yield


def _remove_stale_copies(directory: Path) -> None:
    """Remove the copies a compaction killed before its rename left (only a holder of the
    compaction lock writes one, so none is being written now)."""
    for entry in os.scandir(directory):
        if entry.name.startswith(".") and entry.name.endswith(COPY_SUFFIX):
            with suppress(FileNotFoundError):
                os.unlink(entry.path)


def compact_dir(directory: Path, shards: list[str], *, history: int) -> list[CompactReport]:
    """Compact the named shards of ``directory`` (file names), one rename each."""
    with maintenance(directory):
        found = scan_dir(directory)
        targets = [name for name in shards if name in found.scans]
        scope: set[OpId] = set()
        for name in targets:
            scope |= in_scope(found.scans[name][0])
        # One plan for every target (see maintenance()).
        drops = droppable(found.groups, lambda op: op.id in scope, history, found.arrived)
        return [rewrite(directory / name, found.scans[name], drops) for name in targets]


def in_scope(lines: Iterable[Line]) -> set[OpId]:
    """Ops of a shard that may go: all but each author's last (it holds the seq high-water
    mark and closes the last batch)."""
    ops = [line.op for line in lines if line.op is not None]
    last: dict[str, int] = {}
    for op in ops:
        last[op.node] = max(last.get(op.node, 0), op.seq)
    return {op.id for op in ops if last[op.node] != op.seq}


def kept_lines(
    name: str,
    lines: Sequence[tuple[bytes, Op | None]],
    drops: Set[OpId],
    cp: Checkpoint | None = None,
) -> list[bytes]:
    """A shard's lines (raw, op) without ``drops``, each run of dropped lines of its author
    replaced by a stub so the author's chain still crosses it (:func:`noon.core.chain.restub`).
    A shard that also holds corrupt lines or another author's ops keeps them and leaves no
    stubs: its chain was broken before (a corrupt line is never served); so does an unsigned
    shard, as in revision 1 (its author signs a checkpoint when it starts signing)."""
    shape = [Line(op, len(raw), bool(raw.strip()), chain.SIG_FIELD in raw) for raw, op in lines]
    return list(_kept(name, lines, drops, cp, plain=_plain(name, shape)))


def _plain(name: str, lines: Iterable[Line]) -> bool:
    """Dropped lines leave no stubs in this shard (see :func:`kept_lines`)."""
    author = shard_node(name)
    if author is None:
        return True
    signed = False
    for line in lines:
        if (line.op.node != author) if line.op is not None else line.text:
            return True
        signed = signed or line.signed
    return not signed


def _kept(
    name: str,
    lines: Iterable[tuple[bytes, Op | None]],
    drops: Set[OpId],
    cp: Checkpoint | None,
    *,
    plain: bool,
) -> Iterator[bytes]:
    if plain:
        return (raw for raw, op in lines if op is None or op.id not in drops)
    items = ((op.seq, raw, op.id not in drops) for raw, op in lines if op is not None)
    return chain.restubbed(shard_node(name) or "", items, cp=cp)


def rewrite(path: Path, scan: Scan, drops: Set[OpId]) -> CompactReport:
    """Rewrite one shard without the ops in ``drops``; everything else stays verbatim."""
    lines, end, inode = scan
    ops = [line.op for line in lines if line.op is not None]
    corrupt = sum(1 for line in lines if line.op is None and line.text)
    unchanged = CompactReport(path.name, len(ops), len(ops), corrupt)
    if not any(op.id in drops for op in ops):
        return unchanged
    author = shard_node(path.name)
    cp = chainstate.checkpoint(path.parent, author) if author else None
    copy = path.with_name(f".{path.name}{COPY_SUFFIX}")
    with suppress(FileNotFoundError):
        os.unlink(copy)
    kept = sum(line.size + 1 for line in lines if line.op is None or line.op.id not in drops)
    _check_space(path, kept)
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_ino != inode:
            return _not_done(unchanged)
        try:
            out = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
            try:
                pairs = _paired(_raw_lines(fd, end), lines)
                body = _kept(path.name, pairs, drops, cp, plain=_plain(path.name, lines))
                _write(out, path, (raw + b"\n" for raw in body))
                os.fsync(out)
                with locked(path):
                    st = os.fstat(fd)
                    if os.lstat(path).st_ino != inode or st.st_size < end:
                        # Rewritten by someone else since the scan (only possible without the
                        # maintenance lock): leave it, the next run will do.
                        return _not_done(unchanged)
                    _write(out, path, _tail(fd, end, st.st_size))
                    os.fsync(out)
                    os.replace(copy, path)
            finally:
                os.close(out)
        except _Changed:
            return _not_done(unchanged)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(copy)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    after = sum(1 for op in ops if op.id not in drops)
    return CompactReport(path.name, len(ops), after, corrupt)


def _not_done(report: CompactReport) -> CompactReport:
    return CompactReport(report.shard, report.before, report.after, report.corrupt_kept, False)


def _paired(raws: Iterator[bytes], lines: list[Line]) -> Iterator[tuple[bytes, Op | None]]:
    """The shard's lines read again, each with the op its scan found there."""
    for line in lines:
        raw = next(raws, None)
        if raw is None or len(raw) != line.size:
            raise _Changed("its lines are not those the plan read")
        yield raw, line.op


def _tail(fd: int, start: int, end: int) -> Iterator[bytes]:
    """Bytes ``start`` to ``end`` of the open file ``fd``, :data:`CHUNK` at a time."""
    while start < end:
        data = os.pread(fd, min(CHUNK, end - start), start)
        if not data:
            raise _Changed("it shrank")
        start += len(data)
        yield data


def _write(fd: int, path: Path, pieces: Iterable[bytes]) -> None:
    """Write ``pieces`` to ``fd``, :data:`CHUNK` bytes per call; a full disk is
    :class:`DiskFull` (the caller removes the copy)."""
    buffer = bytearray()
    try:
        for piece in pieces:
            buffer += piece
            if len(buffer) >= CHUNK:
                write_all(fd, bytes(buffer))
                buffer.clear()
        write_all(fd, bytes(buffer))
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise DiskFull(
            f"cannot compact {path.name}: the disk holding {path.parent} filled up while its "
            f"new copy was written. Nothing was changed; free space there and run it again."
        ) from None


SPACE_MARGIN = 1 << 20
"""Room kept beside a compaction's new copy: the read model's fold of the rewritten shard, the
journal, logs."""


def _check_space(path: Path, need: int) -> None:
    """A compaction writes the shard's new copy beside the old one until the rename: it needs
    that copy's size free (not the old file's: only what is kept is written). Checked first, so
    a small disk is told what it lacks instead of meeting ENOSPC half way."""
    free = free_bytes(path.parent)
    if free < need + SPACE_MARGIN:
        raise DiskFull(
            f"cannot compact {path.name}: its new copy needs {need} bytes (plus "
            f"{SPACE_MARGIN} to spare) beside the old one until it replaces it, and the disk "
            f"holding {path.parent} has {free} bytes free. Nothing was changed; free space "
            "there and run it again."
        )
