"""Compaction: rewrite a shard without the ops that can no longer affect any read.

The decision is the pure :func:`noon.core.compaction.droppable`, made on a fresh full read of
every shard under a directory-wide compaction lock (two compactions planning on each other's
old files could each drop the last op naming a version). The rewrite keeps every other line
verbatim and in place (unknown ops, corrupt lines, other authors' ops), goes to a temp file,
and is swapped in by rename under the shard's own lock after copying whatever was appended
meanwhile, so a concurrent append is never lost and waits only for that short copy. Each run of
dropped lines leaves a stub behind, so the author's signatures still prove what remains
(PROTOCOL.md §13.3).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Set
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from noon.core import chain
from noon.core.checkpoint import Checkpoint
from noon.core.compaction import droppable
from noon.core.gcpause import paused as paused_gc
from noon.core.ops import Key, Op, OpError, OpId, decode
from noon.names import shard_node
from noon.store import chainstate
from noon.store.errors import DiskFull
from noon.store.private import make_dir
from noon.store.readmodel.behind import free_bytes
from noon.store.shard import list_shards, locked, open_regular, write_file

Scan = tuple[list[tuple[bytes, Op | None]], int, int]
"""A shard's complete lines with their ops (None: corrupt or blank), the offset after the last
complete line, and the inode read."""


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
    """Complete lines of a shard with their ops (None for corrupt or blank lines), the offset
    just after the last complete line, and the inode read."""
    fd = open_regular(path)
    try:
        st = os.fstat(fd)
        data = os.pread(fd, st.st_size, 0)
    finally:
        os.close(fd)
    end = data.rfind(b"\n") + 1
    lines: list[tuple[bytes, Op | None]] = []
    for raw in data[:end].split(b"\n")[:-1]:
        try:
            op = decode(raw) if raw.strip() else None
        except OpError:
            op = None
        lines.append((raw, op))
    return lines, end, st.st_ino


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
        for _, op in lines:
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
        yield


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


def in_scope(lines: list[tuple[bytes, Op | None]]) -> set[OpId]:
    """Ops of a shard that may go: all but each author's last (it holds the seq high-water
    mark and closes the last batch)."""
    last: dict[str, int] = {}
    for _, op in lines:
        if op is not None:
            last[op.node] = max(last.get(op.node, 0), op.seq)
    return {op.id for _, op in lines if op is not None and last[op.node] != op.seq}


def kept_lines(
    name: str,
    lines: list[tuple[bytes, Op | None]],
    drops: Set[OpId],
    cp: Checkpoint | None = None,
) -> list[bytes]:
    """A shard's lines without ``drops``, each run of dropped lines of its author replaced by a
    stub so the author's chain still crosses it (:func:`noon.core.chain.restub`). A shard that
    also holds corrupt lines or another author's ops keeps them and leaves no stubs: its chain
    was broken before (a corrupt line is never served); so does an unsigned shard, as in
    revision 1 (its author signs a checkpoint when it starts signing)."""
    author = shard_node(name)
    foreign = any(op.node != author if op else raw.strip() for raw, op in lines)
    if author is None or foreign or not any(chain.SIG_FIELD in raw for raw, _ in lines):
        return [raw for raw, op in lines if op is None or op.id not in drops]
    items = [(op.seq, raw, op.id not in drops) for raw, op in lines if op]
    return chain.restub(author, items, cp=cp)


def rewrite(path: Path, scan: Scan, drops: Set[OpId]) -> CompactReport:
    """Rewrite one shard without the ops in ``drops``; everything else stays verbatim."""
    lines, end, inode = scan
    ops = [op for _, op in lines if op is not None]
    corrupt = sum(1 for raw, op in lines if op is None and raw.strip())
    if not any(op.id in drops for op in ops):
        return CompactReport(path.name, len(ops), len(ops), corrupt)
    author = shard_node(path.name)
    cp = chainstate.checkpoint(path.parent, author) if author else None
    body = b"".join(raw + b"\n" for raw in kept_lines(path.name, lines, drops, cp))
    with locked(path):
        fd = open_regular(path)
        try:
            st = os.fstat(fd)
            if st.st_ino != inode or st.st_size < end:
                # Rewritten by someone else since the scan (only possible without the
                # maintenance lock): leave it, the next run will do.
                return CompactReport(path.name, len(ops), len(ops), corrupt, done=False)
            appended = os.pread(fd, st.st_size - end, end)
        finally:
            os.close(fd)
        _check_space(path, len(body) + len(appended))
        write_file(path, [body, appended])
    after = sum(1 for _, op in lines if op is not None and op.id not in drops)
    return CompactReport(path.name, len(ops), after, corrupt)


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
