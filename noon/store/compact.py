"""Compaction: rewrite a shard without the ops that can no longer affect any read.

The decision is the pure :func:`noon.core.compaction.droppable`, made on a fresh full read of
every shard under a directory-wide compaction lock (two compactions planning on each other's
old files could each drop the last op naming a version). The rewrite keeps every other line
verbatim and in place (unknown ops, corrupt lines, other authors' ops), goes to a temp file,
and is swapped in by rename under the shard's own lock after copying whatever was appended
meanwhile, so a concurrent append is never lost and waits only for that short copy.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from noon.core.compaction import droppable
from noon.core.ops import Key, Op, OpError, OpId, decode
from noon.store.shard import fsync_dir, locked


@dataclass(frozen=True)
class CompactReport:
    shard: str
    before: int
    after: int
    corrupt_kept: int

    @property
    def dropped(self) -> int:
        return self.before - self.after


def _scan(path: Path) -> tuple[list[tuple[bytes, Op | None]], int, int]:
    """Complete lines of a shard with their ops (None for corrupt or blank lines), the offset
    just after the last complete line, and the inode read."""
    fd = os.open(path, os.O_RDONLY)
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


def compact_dir(directory: Path, shards: list[str], *, history: int) -> list[CompactReport]:
    """Compact the named shards of ``directory`` (file names), one rename each."""
    state = directory / ".noon"
    state.mkdir(exist_ok=True)
    with locked(state / "compact"):
        scans = {}
        for name in sorted(n for n in os.listdir(directory) if n.endswith(".jsonl")):
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
        grouped = {k: list(v.values()) for k, v in groups.items()}
        targets = [name for name in shards if name in scans]
        scope: set[OpId] = set()
        for name in targets:
            scope |= _in_scope(scans[name][0])
        # One plan for every target: planning shards separately could let each drop the
        # other's last op naming a version, and that version would come back as a head.
        drops = droppable(grouped, lambda op: op.id in scope, history, arrived)
        return [_rewrite(directory / name, scans[name], drops) for name in targets]


def _in_scope(lines: list[tuple[bytes, Op | None]]) -> set[OpId]:
    """Ops of a shard that may go: all but each author's last (it holds the seq high-water
    mark and closes the last batch)."""
    last: dict[str, int] = {}
    for _, op in lines:
        if op is not None:
            last[op.node] = max(last.get(op.node, 0), op.seq)
    return {op.id for _, op in lines if op is not None and last[op.node] != op.seq}


def _rewrite(
    path: Path, scan: tuple[list[tuple[bytes, Op | None]], int, int], drops: set[OpId]
) -> CompactReport:
    lines, end, inode = scan
    ops = [op for _, op in lines if op is not None]
    corrupt = sum(1 for raw, op in lines if op is None and raw.strip())
    if not any(op.id in drops for op in ops):
        return CompactReport(path.name, len(ops), len(ops), corrupt)
    kept = [raw for raw, op in lines if op is None or op.id not in drops]
    body = b"".join(raw + b"\n" for raw in kept)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.compact.tmp")
    with locked(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            if st.st_ino != inode or st.st_size < end:
                # Rewritten by someone else since the scan: leave it, the next run will do.
                return CompactReport(path.name, len(ops), len(ops), corrupt)
            appended = os.pread(fd, st.st_size - end, end)
        finally:
            os.close(fd)
        with open(tmp, "wb") as out:
            out.write(body)
            out.write(appended)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    after = sum(1 for _, op in lines if op is not None and op.id not in drops)
    return CompactReport(path.name, len(ops), after, corrupt)
