"""One shard file: opening it safely, the cross-process lock, the atomic file writer,
repairing a torn tail, and the incremental reader.

Nothing in ``NOON_DIR`` is opened through a symbolic link or unless it is a regular file
(:func:`open_regular`): a FIFO, a directory or a link named like a shard is skipped by every
listing (:func:`list_shards`) and treated as absent by every reader.

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

import contextlib
import fcntl
import functools
import mmap
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from noon.core.ops import Op, OpError, decode
from noon.errors import Unavailable
from noon.names import shard_node
from noon.store.lines import BatchGate, Buffer, Envelope, clean_end, last_complete, lines_backwards
from noon.store.private import FILE_MODE, make_dir

READ_CHUNK = 16 << 20
WRITTEN_MAX = 200_000
"""Lines kept in :data:`_written` at most (twice the largest batch)."""

_written: dict[bytes, Op] = {}
"""Lines this process appended (without their newlines), with the ops its writer built for them
from validated drafts (:func:`written`): a reader takes the op from here instead of decoding
the line a second time. What no reader takes is decoded as usual, so this is only a shortcut:
the op of a line is a function of its bytes either way (a test holds a write's ops equal to
its lines decoded)."""


def written(lines: Sequence[bytes], ops: Sequence[Op]) -> None:
    """Remember the ops of ``lines`` just appended, for the next poll that reads them."""
    if len(_written) + len(lines) > WRITTEN_MAX:
        _written.clear()
    _written.update(zip(lines, ops, strict=True))


@dataclass(frozen=True)
class Corrupt:
    """A complete line that is not a valid op. Reported, skipped by reads, kept by rewrites."""

    shard: str
    line: int
    reason: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.shard}:{self.line}: {self.reason} ({self.excerpt})"


class NotRegular(Unavailable, FileNotFoundError):
    """An entry of ``NOON_DIR`` named like a file noon uses that is not a regular file (a
    symbolic link, a FIFO, a directory, a device). It is never opened through: every reader
    treats it as absent (hence a :class:`FileNotFoundError`), and ``noon doctor`` names it."""


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = FILE_MODE) -> int:
    """Open ``path`` without following a symbolic link and without blocking on a FIFO; refuse
    anything but a regular file (:class:`NotRegular`). A missing file raises
    :class:`FileNotFoundError` as ``os.open`` does (unless ``flags`` create it)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except FileNotFoundError:
        raise
    except OSError:  # ELOOP (a link), ENXIO (a FIFO without a reader), EISDIR, ...
        if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
            raise NotRegular(_not_regular(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(_not_regular(path))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_regular(path: Path) -> str:
    return (
        f"{path} is not a regular file (noon never opens a link, a FIFO or a directory in its "
        "place); move it away"
    )


def read_regular(path: Path, limit: int) -> bytes:
    """The content of a regular file of at most ``limit`` bytes (see :func:`open_regular`);
    a larger one raises :class:`NotRegular` too: it is not a file noon wrote."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise NotRegular(f"{path} holds {size} bytes, more than the {limit} expected")
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)


def list_shards(directory: Path) -> list[str]:
    """The shard files of ``directory``, sorted: valid shard names that are regular files. A
    link, FIFO or directory named like a shard is left out (see :func:`unsafe_entries`)."""
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    return sorted(
        e.name
        for e in entries
        if shard_node(e.name) is not None and e.is_file(follow_symlinks=False)
    )


def unsafe_entries(directory: Path) -> list[tuple[str, str]]:
    """Entries named like a shard (or its lock), or inside ``.noon``, that are not regular
    files, with what they are: noon skips them everywhere, and ``noon doctor`` names them."""
    out = []
    for e in _entries(directory):
        name = e.name.removesuffix(".lock")
        if shard_node(name) is None or e.is_file(follow_symlinks=False):
            continue
        out.append((e.name, _kind(e)))
    for e in _entries(directory / ".noon"):
        if not e.is_file(follow_symlinks=False):
            out.append((f".noon/{e.name}", _kind(e)))
    return sorted(out)


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _kind(e: os.DirEntry[str]) -> str:
    if e.is_symlink():
        return "a symbolic link"
    if e.is_dir(follow_symlinks=False):
        return "a directory"
    return "a FIFO, socket or device"


@contextmanager
def mapped(path: Path) -> Iterator[Buffer]:
    """A shard's bytes, mapped read-only (``b""`` when it is missing, empty or not a regular
    file). The mapping sees the inode opened: a compaction's rename does not disturb it."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        fd = -1
    buf: Buffer = b""
    if fd >= 0:
        try:
            size = os.fstat(fd).st_size
            if size:
                buf = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
    try:
        yield buf
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def lock_path(shard: Path) -> Path:
    return shard.with_name(shard.name + ".lock")


@contextmanager
def locked(shard: Path) -> Iterator[None]:
    """Hold the shard's cross-process lock. ``flock`` on a sidecar file that is never renamed,
    so it stays valid across compactions and is released by the kernel if the holder dies."""
    held = HeldLock(shard)
    try:
        yield
    finally:
        held.release()


class HeldLock:
    """The shard's cross-process lock as an object, for a holder that releases it later."""

    def __init__(self, shard: Path) -> None:
        self.shard = shard
        self.fd = open_regular(lock_path(shard), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise

    def release(self) -> None:
        os.close(self.fd)


def write_file(
    path: Path, data: bytes | Iterable[bytes], *, mode: int = FILE_MODE, durable: bool = True
) -> None:
    """Replace ``path`` with ``data`` (bytes, or chunks written in order) atomically: a crash
    leaves the old file or the new one, never a mixture; ``durable`` also survives a power
    loss (fsync of the file and its directory). The new file is created with ``mode`` (less
    the umask); a link at ``path`` is replaced, never written through."""
    make_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            for chunk in [data] if isinstance(data, bytes) else data:
                write_all(fd, chunk)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    if durable:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Tail:
    """What a writer learns from the end of its shard before appending."""

    last: Op | None
    torn_bytes: int = 0
    dropped_batch: int = 0


def repair_tail(fd: int, node: str) -> Tail:
    """Under the lock: truncate a torn last line and an incomplete trailing batch of ``node``;
    return the node's last op. Never touches a complete line that is not part of a torn batch
    (a complete corrupt line is reported by readers and kept)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return Tail(None)
    buf = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    try:
        clean = clean_end(buf)
        gated = last_complete(_own_ops(buf, clean, node))
    finally:
        buf.close()
    result = Tail(gated.last[1] if gated.last else None, size - clean, len(gated.unfinished))
    cut = gated.unfinished[-1][0] if gated.unfinished else clean
    if cut < size:
        os.ftruncate(fd, cut)
        os.fsync(fd)
    return result


def _own_ops(buf: Buffer, end: int, node: str) -> Iterator[tuple[tuple[int, Op], Envelope]]:
    """From the end: ((line start, op), envelope) of the valid ops of ``node``."""
    for start, raw in lines_backwards(buf, end):
        try:
            op = decode(raw)
        except OpError:
            continue
        if op.node == node:
            yield (start, op), Envelope(op.node, op.seq, op.bat)


def append_all(
    fd: int, data: bytes, *, fsync: bool, meanwhile: Callable[[], None] | None = None
) -> None:
    """Under the shard's lock: append ``data`` (whole lines) all or nothing. A write or fsync
    that fails (a full disk) truncates the file back to where it was before raising, so a
    failure reported is an append that did not happen, and a retry cannot duplicate it.

    ``meanwhile`` (which must not raise) runs while the fsync does, on a thread of its own that
    waits for the disk without the interpreter; it returns once both are done."""
    size = os.fstat(fd).st_size
    try:
        write_all(fd, data)
        if fsync:
            _fsync_beside(fd, meanwhile)
    except BaseException:
        os.ftruncate(fd, size)
        with contextlib.suppress(OSError):
            os.fsync(fd)
        raise


def _fsync_beside(fd: int, meanwhile: Callable[[], None] | None) -> None:
    """fsync ``fd``, running ``meanwhile`` while it waits (after it, once the interpreter is
    shutting down and no thread takes new work)."""
    if meanwhile is None:
        os.fsync(fd)
        return
    try:
        synced = _syncer().submit(os.fsync, fd)
    except RuntimeError:  # cannot schedule new futures after interpreter shutdown
        os.fsync(fd)
        meanwhile()
        return
    try:
        meanwhile()
    finally:
        synced.result()


@functools.cache
def _syncer() -> ThreadPoolExecutor:
    """The thread an fsync waits on while :func:`append_all`'s caller goes on."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="noon-fsync")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@dataclass
class Poll:
    ops: list[Op] = field(default_factory=list)
    corrupt: list[Corrupt] = field(default_factory=list)
    at: dict[tuple[str, int], int] = field(default_factory=dict)
    """Where each op's line starts, by op id."""
    rewritten: bool = False
    """The file was replaced (compaction) or shrank: it was read again from the start."""
    size: int = 0
    """The file's size when it was polled."""


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
        """Up to 64 bytes before ``offset``: lets a saved cursor check the file is still the
        same."""

    def poll(self, max_bytes: int | None = None) -> Poll:
        """What the file gained since the last poll; with ``max_bytes``, only what lies in the
        next ``max_bytes`` bytes (a batch that does not end there waits for a larger poll)."""
        result = Poll()
        fd = open_regular(self.path)  # FileNotFoundError (or NotRegular): the caller decides
        try:
            st = os.fstat(fd)
            result.size = st.st_size
            if st.st_ino != self.inode or st.st_size < self.offset or self._regrown(fd, st):
                result.rewritten = self.inode != -1
                self.inode, self.offset, self.line, self.tail_mark = st.st_ino, 0, 0, b""
            end = st.st_size if max_bytes is None else min(st.st_size, self.offset + max_bytes)
            if end > self.offset:
                self._read(fd, end, result)
        finally:
            os.close(fd)
        return result

    def _regrown(self, fd: int, st: os.stat_result) -> bool:
        """Whether the file grew past ``offset`` with other bytes before it than those read: an
        append that fails on a full disk is truncated back (:func:`append_all`), and a reader
        may have read its lines meanwhile; if the file then grows past ``offset`` again before
        the next poll (the same ops, or stubs where a collection took them), neither its inode
        nor its size says so. One ``pread`` of the bytes before ``offset``, only when there is
        something new to read."""
        if st.st_size <= self.offset or not self.tail_mark:
            return False
        start = self.offset - len(self.tail_mark)
        return os.pread(fd, len(self.tail_mark), start) != self.tail_mark

    def _read(self, fd: int, size: int, result: Poll) -> None:
        pos = self.offset
        line_no = self.line
        gate: BatchGate[Op] = BatchGate()
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
                begins = pos
                pos += len(raw) + 1
                line_no += 1
                op = _written.pop(raw, None)
                if op is None:
                    try:
                        op = decode(raw) if raw.strip() else None
                    except OpError as exc:
                        excerpt = raw[:80].decode("utf-8", "replace")
                        result.corrupt.append(Corrupt(self.name, line_no, str(exc), excerpt))
                if op is None:
                    if not gate.open:
                        self._commit(pos, line_no, raw)
                    continue
                result.at[op.node, op.seq] = begins
                visible = gate.feed(op, op.node, op.seq, op.bat)
                if visible:
                    result.ops.extend(visible)
                    self._commit(pos, line_no, raw)
            leftover = data[start:]

    def _commit(self, pos: int, line_no: int, raw: bytes) -> None:
        self.offset = pos
        self.line = line_no
        self.tail_mark = (raw + b"\n")[-64:]
