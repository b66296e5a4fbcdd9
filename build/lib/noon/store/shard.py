"""One shard file: the cross-process lock, appending a batch, repairing a torn tail, and the
incremental reader.

File invariants (every writer keeps them, every reader relies on them):
- Lines end with ``\\n``. Bytes after the last ``\\n`` are a torn write: readers never consume
  them and the next writer (under the lock) truncates them.
- A batch is written with one ``write`` under the lock. Its ops carry ``bat`` (seq of the
  batch's last op); a reader applies them only once it has seen an op of that author with
  ``seq >= bat``. So a batch cut short by a crash is never half-visible, and its complete lines
  are truncated by the next writer of the node's own shard (they were never acknowledged).
- A compaction replaces the file by rename (new inode) and never drops the last op of an
  author, so seq high-water marks and batch boundaries survive it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.ops import Op, OpError, decode

READ_CHUNK = 16 << 20


@dataclass(frozen=True)
class Corrupt:
    """A complete line that is not a valid op. Reported, skipped by reads, kept by rewrites."""

    shard: str
    line: int
    reason: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.shard}:{self.line}: {self.reason} ({self.excerpt})"


def lock_path(shard: Path) -> Path:
    return shard.with_name(shard.name + ".lock")


@contextmanager
def locked(shard: Path) -> Iterator[None]:
    """Hold the shard's cross-process lock. ``flock`` on a sidecar file that is never renamed,
    so it stays valid across compactions and is released by the kernel if the holder dies."""
    fd = os.open(lock_path(shard), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably: a crash leaves the old file or the
    new one, never a mixture."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines_backwards(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines of ``[0, end)`` from the last to the first, as (start offset, bytes).
    ``end`` must sit just after a newline (or be 0)."""
    buf = b""
    pos = end  # file offset of buf[0] after the next read
    while True:
        cut = buf.rfind(b"\n", 0, len(buf) - 1) if buf else -1
        while cut >= 0:
            yield pos + cut + 1, buf[cut + 1 :]
            buf = buf[: cut + 1]
            cut = buf.rfind(b"\n", 0, len(buf) - 1)
        if pos == 0:
            if buf:
                yield 0, buf
            return
        step = min(pos, 1 << 16)
        pos -= step
        buf = os.pread(fd, step, pos) + buf


@dataclass
class Tail:
    """What a writer learns from the end of its shard before appending."""

    last: Op | None
    torn_bytes: int = 0
    dropped_batch: int = 0


def repair_tail(fd: int, node: str) -> Tail:
    """Under the lock: truncate a torn last line and an incomplete trailing batch of ``node``;
    return the node's last op. Never touches a complete line that is not part of a torn batch."""
    size = os.fstat(fd).st_size
    if size == 0:
        return Tail(None)
    tail_len = min(size, 1 << 16)
    chunk = os.pread(fd, tail_len, size - tail_len)
    clean = size
    if not chunk.endswith(b"\n"):
        nl = chunk.rfind(b"\n")
        while nl < 0 and tail_len < size:
            tail_len = min(size, tail_len * 4)
            chunk = os.pread(fd, tail_len, size - tail_len)
            nl = chunk.rfind(b"\n")
        clean = size - tail_len + nl + 1 if nl >= 0 else 0
    result = Tail(None, torn_bytes=size - clean)
    batch_start: int | None = None
    batch_end = 0
    for start, raw in _lines_backwards(fd, clean):
        if not raw.strip():
            continue
        try:
            op = decode(raw)
        except OpError:
            continue  # a complete corrupt line: readers report it; it is never truncated
        if op.node != node:
            continue
        if batch_start is not None:
            if op.bat == batch_end:
                batch_start = start
                result.dropped_batch += 1
                continue
            result.last = op
            break
        if op.bat is not None and op.bat > op.seq:
            batch_start, batch_end = start, op.bat
            result.dropped_batch = 1
            continue
        result.last = op
        break
    cut = batch_start if batch_start is not None else clean
    if cut < size:
        os.ftruncate(fd, cut)
        os.fsync(fd)
    return result


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@dataclass
class Poll:
    ops: list[Op] = field(default_factory=list)
    corrupt: list[Corrupt] = field(default_factory=list)
    rewritten: bool = False
    """The file was replaced (compaction) or shrank: it was read again from the start."""


class ShardReader:
    """Reads one shard incrementally: a poll costs one ``stat`` when nothing changed, and
    otherwise decodes only the bytes appended since the last poll.

    ``offset`` always sits at the end of a line after which no batch is pending, which is a
    point no writer's repair ever truncates below."""

    __slots__ = ("inode", "line", "name", "offset", "path", "tail_mark")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        self.inode = -1
        self.offset = 0
        self.line = 0
        self.tail_mark = b""
        """Up to 64 bytes before ``offset``: lets a snapshot check the file is still the same."""

    def poll(self) -> Poll:
        result = Poll()
        fd = os.open(self.path, os.O_RDONLY)  # FileNotFoundError: the caller decides
        try:
            st = os.fstat(fd)
            if st.st_ino != self.inode or st.st_size < self.offset:
                result.rewritten = self.inode != -1
                self.inode, self.offset, self.line, self.tail_mark = st.st_ino, 0, 0, b""
            if st.st_size == self.offset:
                return result
            self._read(fd, st.st_size, result)
        finally:
            os.close(fd)
        return result

    def _read(self, fd: int, size: int, result: Poll) -> None:
        pos = self.offset
        line_no = self.line
        pending: list[Op] = []
        until = 0
        author = ""
        leftover = b""
        read_at = pos
        while read_at < size:
            chunk = os.pread(fd, min(READ_CHUNK, size - read_at), read_at)
            if not chunk:
                break
            read_at += len(chunk)
            data = leftover + chunk
            start = 0
            while True:
                nl = data.find(b"\n", start)
                if nl < 0:
                    break
                raw = data[start:nl]
                start = nl + 1
                pos += len(raw) + 1
                line_no += 1
                if not raw.strip():
                    if not pending:
                        self._commit(pos, line_no, raw)
                    continue
                try:
                    op = decode(raw)
                except OpError as exc:
                    result.corrupt.append(
                        Corrupt(self.name, line_no, str(exc), raw[:80].decode("utf-8", "replace"))
                    )
                    if not pending:
                        self._commit(pos, line_no, raw)
                    continue
                if pending:
                    pending.append(op)
                    if op.bat is not None and op.node == author:
                        until = max(until, op.bat)
                    if op.node == author and op.seq >= until:
                        result.ops.extend(pending)
                        pending = []
                        self._commit(pos, line_no, raw)
                elif op.bat is not None and op.bat > op.seq:
                    pending, until, author = [op], op.bat, op.node
                else:
                    result.ops.append(op)
                    self._commit(pos, line_no, raw)
            leftover = data[start:]

    def _commit(self, pos: int, line_no: int, raw: bytes) -> None:
        self.offset = pos
        self.line = line_no
        self.tail_mark = (raw + b"\n")[-64:]
