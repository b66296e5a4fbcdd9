"""File-level helpers for replication: summarise a shard, serve its ops after a seq cursor, and
append ops received from a peer, keeping every invariant of :mod:`noon.store.shard`.

A shard holds the ops of one author, in increasing ``seq`` order (the author appends in order,
replicas only ever append ops above their highest seq, compaction keeps the order). So a seq
cursor is a binary search away from a byte offset, and a compaction on either side never makes
a cursor invalid: the cursor names ops, not bytes.

Served pages hold complete batches only, so a batch never reaches a peer half-written. Lines are
served verbatim: a peer stores exactly the bytes the author wrote (unknown future fields and
kinds included), which is what makes a duplicate tell itself apart from a fork by digest.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from noon.core.compaction import stale_after_refetch
from noon.core.ops import Key, Op, OpError, decode, line_digest
from noon.errors import NoonError
from noon.names import shard_file, shard_node
from noon.store import forgotten
from noon.store.compact import maintenance
from noon.store.shard import fsync_dir, lock_path, locked, repair_tail, write_all
from noon.store.store import ForkDetected

Checks = Sequence[tuple[int, int]]
"""(seq, digest) pairs of one shard, compared by a peer to find a forked history."""


class ReplicaError(NoonError, ValueError):
    """Ops received from a peer that cannot be stored. The message says which line and why."""


class SkipsCompacted(ReplicaError):
    """Received ops skip seqs above this shard's head: the sender compacted them away.

    Appending past them would be wrong, not just incomplete: the missing ops may be the ones
    that superseded versions this replica still holds, and those would show again (a deleted
    memory would come back here). The replica must instead take the sender's whole shard
    (:func:`replace`)."""

    def __init__(self, node: str, before: int, first: int) -> None:
        super().__init__(
            f"ops {node}:{before + 1}..{first - 1} were compacted away by the sender; this replica "
            "must re-fetch the whole shard instead of appending past them"
        )


@dataclass(frozen=True)
class Summary:
    """What a node holds of one shard: the highest complete seq and the digest of that op."""

    node: str
    seq: int
    digest: int

    def as_json(self) -> dict[str, object]:
        return {"node": self.node, "seq": self.seq, "digest": f"{self.digest:016x}"}


@dataclass(frozen=True)
class Page:
    body: bytes
    """Complete lines (each ending in a newline), verbatim from the shard."""
    ops: int
    last: int
    """Seq of the last op in the page; the cursor for the next page (``after`` when empty)."""
    more: bool
    """The page stopped at the size limit; ask again with ``after=last``."""
    head: int
    """Highest complete seq of the shard when the page was read."""
    checked: bool
    """At least one of the reader's digests (``check``, ``checks``) was compared with an op
    held here (False when none was sent or none of those ops is held any more)."""


@dataclass(frozen=True)
class Appended:
    appended: int
    skipped: int
    head: int


def _seq_of(raw: bytes) -> tuple[int, int | None] | None:
    """(seq, bat) of a line, or None for a blank or undecodable line. Lines served and stored
    were validated on the way in, so the envelope is enough here."""
    if not raw.strip():
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    seq, bat = obj.get("seq"), obj.get("bat")
    if not isinstance(seq, int) or isinstance(seq, bool):
        return None
    return seq, bat if isinstance(bat, int) and not isinstance(bat, bool) else None


def _clean_end(buf: mmap.mmap | bytes) -> int:
    """Offset just after the last newline: bytes after it are a torn write."""
    return buf.rfind(b"\n") + 1


def _line_at(buf: mmap.mmap | bytes, pos: int, end: int) -> tuple[int, bytes]:
    """The line starting at ``pos``: (offset after its newline, bytes without newline)."""
    nl = buf.find(b"\n", pos, end)
    return nl + 1, bytes(buf[pos:nl])


def _first_after(buf: mmap.mmap | bytes, end: int, after: int) -> int:
    """Offset of the first line whose seq is greater than ``after`` (``end`` when none)."""
    lo, hi = 0, end  # invariant: the answer is a line start in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        start = 0 if mid == 0 else buf.rfind(b"\n", 0, mid) + 1
        pos = start
        found: int | None = None
        while pos < hi:
            nxt, raw = _line_at(buf, pos, end)
            parsed = _seq_of(raw)
            if parsed is not None:
                found = parsed[0]
                break
            pos = nxt
        if found is None or found > after:
            hi = start
        else:
            lo = _line_at(buf, pos, end)[0]
    return lo


def _lines(buf: mmap.mmap | bytes, pos: int, end: int) -> Iterator[tuple[int, bytes]]:
    while pos < end:
        nxt, raw = _line_at(buf, pos, end)
        yield nxt, raw
        pos = nxt


def _open_map(path: Path) -> mmap.mmap | bytes:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return b""
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)


def _digest_at(buf: mmap.mmap | bytes, end: int, seq: int) -> int | None:
    pos = _first_after(buf, end, seq - 1)
    if pos >= end:
        return None
    _, raw = _line_at(buf, pos, end)
    parsed = _seq_of(raw)
    if parsed is None or parsed[0] != seq:
        return None
    return line_digest(raw.rstrip(b"\r\n\t "))


def digest_at(path: Path, seq: int) -> int | None:
    """The line digest of the op with ``seq`` in a shard, or None when the shard lacks it."""
    buf = _open_map(path)
    try:
        return _digest_at(buf, _clean_end(buf), seq)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


MAX_CHECKS = 32
"""Most (seq, digest) pairs one request may ask a peer to compare."""
CHECKS_SENT = 16
"""How many of its newest ops at or below the cursor a node asks a peer to compare."""


def recent_digests(path: Path, at_or_below: int, count: int = CHECKS_SENT) -> list[tuple[int, int]]:
    """(seq, digest) of a shard's newest ``count`` ops with ``seq <= at_or_below``, newest
    first. Sent with a pull or a push beside ``check``: when the peer no longer holds the op at
    the cursor itself (compacted, or collected with a deleted element), one of these still
    shows a forked history (a node restored from a backup wrote other ops under these seqs)."""
    buf = _open_map(path)
    try:
        end = _clean_end(buf)
        pos = _first_after(buf, end, at_or_below)
        out: list[tuple[int, int]] = []
        while pos > 0 and len(out) < count:
            start = buf.rfind(b"\n", 0, pos - 1) + 1
            raw = bytes(buf[start : pos - 1])
            pos = start
            parsed = _seq_of(raw)
            if parsed is not None:
                out.append((parsed[0], line_digest(raw.rstrip(b"\r\n\t "))))
        return out
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def _compare(buf: mmap.mmap | bytes, end: int, path: Path, checks: Checks, who: str) -> int:
    """Compare a peer's (seq, digest) pairs with the ops held here; raise
    :class:`ForkDetected` on the first that differs. Returns how many could be compared."""
    compared = 0
    for seq, theirs in checks:
        mine = _digest_at(buf, end, seq)
        if mine is None:
            continue  # compacted or collected here: nothing to compare
        if mine != theirs:
            raise ForkDetected(
                f"forked shard {path.name}: op {seq} differs between this node "
                f"(digest {mine:016x}) and the {who} (digest {theirs:016x})"
            )
        compared += 1
    return compared


def compare(path: Path, checks: Checks, *, who: str) -> int:
    """:func:`_compare` on a shard file (a push's checks, before anything is stored)."""
    buf = _open_map(path)
    try:
        return _compare(buf, _clean_end(buf), path, checks, who)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def read_after(
    path: Path, after: int, *, max_bytes: int, check: int | None = None, checks: Checks = ()
) -> Page:
    """The ops of a shard with ``seq > after``, complete batches only, about ``max_bytes`` at
    most (a page always holds at least one batch when one exists, so paging makes progress).

    ``check`` is the reader's digest of its own op at ``after``, ``checks`` more (seq, digest)
    pairs of its ops (:func:`recent_digests`); when this shard holds one of those ops with
    other bytes, :class:`ForkDetected` is raised instead of serving a forked history."""
    buf = _open_map(path)
    try:
        end = _clean_end(buf)
        pairs = [(after, check)] if check is not None and after > 0 else []
        checked = _compare(buf, end, path, [*pairs, *checks], "reader") > 0
        out: list[bytes] = []
        size = 0
        ops = 0
        last = after
        more = False
        group: list[bytes] = []
        group_last = 0
        until = 0
        for _, raw in _lines(buf, _first_after(buf, end, after), end):
            parsed = _seq_of(raw)
            if parsed is None:
                continue
            seq, bat = parsed
            if size >= max_bytes and not group:
                more = True
                break
            group.append(raw)
            group_last = seq
            if bat is not None and bat > until:
                until = bat
            if seq >= until:
                for line in group:
                    out.append(line + b"\n")
                    size += len(line) + 1
                ops += len(group)
                last = group_last
                group = []
        head = summary_of(buf, end, path).seq
        return Page(b"".join(out), ops, last, more, head, checked)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()


def summary_of(buf: mmap.mmap | bytes, end: int, path: Path) -> Summary:
    """The highest seq of a shard whose batch is complete, and that op's digest."""
    node = shard_node(path.name) or ""
    pending: int | None = None
    pos = end
    while pos > 0:
        start = buf.rfind(b"\n", 0, pos - 1) + 1
        raw = bytes(buf[start : pos - 1])
        pos = start
        parsed = _seq_of(raw)
        if parsed is None:
            continue
        seq, bat = parsed
        if pending is not None and bat == pending:
            continue
        if bat is not None and bat > seq:
            pending = bat  # a trailing batch still being written: not visible yet
            continue
        return Summary(node, seq, line_digest(raw.rstrip(b"\r\n\t ")))
    return Summary(node, 0, 0)


class Summaries:
    """Per-shard summaries of a directory, recomputed only for files whose identity changed
    (inode, size, mtime), so an idle round costs one ``stat`` per shard."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._cache: dict[str, tuple[tuple[int, int, int], Summary]] = {}

    def get(self, node: str) -> Summary:
        path = self.dir / shard_file(node)
        try:
            st = path.stat()
        except FileNotFoundError:
            self._cache.pop(node, None)
            return Summary(node, 0, 0)
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._cache.get(node)
        if cached and cached[0] == ident:
            return cached[1]
        buf = _open_map(path)
        try:
            summary = summary_of(buf, _clean_end(buf), path)
        finally:
            if isinstance(buf, mmap.mmap):
                buf.close()
        self._cache[node] = (ident, summary)
        return summary

    def nodes(self) -> list[str]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(n for n in (shard_node(name) for name in names) if n is not None)

    def all(self) -> dict[str, Summary]:
        return {node: self.get(node) for node in self.nodes()}


def parse_ops(body: bytes, node: str, *, max_ops: int) -> list[tuple[bytes, Op]]:
    """Validate an NDJSON body of ops authored by ``node``: every line a valid op of that author,
    seqs strictly increasing, the last batch complete. Raises :class:`ReplicaError` naming the
    first bad line; nothing is stored from a body that fails."""
    out: list[tuple[bytes, Op]] = []
    prev = 0
    for no, raw in enumerate(body.split(b"\n"), 1):
        line = raw.rstrip(b"\r\t ")
        if not line:
            continue
        if len(out) >= max_ops:
            raise ReplicaError(f"more than {max_ops} ops in one body")
        try:
            op = decode(line)
        except OpError as exc:
            raise ReplicaError(f"line {no}: {exc}") from None
        if op.node != node:
            raise ReplicaError(f"line {no}: op of node {op.node!r} in the shard of {node!r}")
        if op.seq <= prev:
            raise ReplicaError(f"line {no}: seq {op.seq} does not follow seq {prev}")
        prev = op.seq
        out.append((line, op))
    if out and out[-1][1].bat not in (None, out[-1][1].seq):
        last = out[-1][1]
        raise ReplicaError(
            f"the last op (seq {last.seq}) belongs to a batch ending at seq {last.bat} that "
            "the body does not complete"
        )
    return out


class HeldLock:
    """The shard's cross-process lock, held across several calls (own shard recovery keeps
    local writers waiting until the shard has caught up, so none of them reuses a seq)."""

    def __init__(self, shard: Path) -> None:
        self.shard = shard
        self.fd = os.open(lock_path(shard), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            raise

    def release(self) -> None:
        os.close(self.fd)


def append(
    directory: Path,
    node: str,
    ops: list[tuple[bytes, Op]],
    *,
    fsync: bool,
    held: HeldLock | None = None,
    allow_skip: bool = False,
    consumed: int = 0,
) -> Appended:
    """Append validated ops (from :func:`parse_ops`) to ``node``'s shard under its lock (or
    under ``held``, the same lock taken earlier by the caller).

    Ops the shard already holds are skipped when byte-identical; one that differs raises
    :class:`ForkDetected` and nothing is written. Ops at or below the shard's highest seq that
    it no longer holds (compacted away) are skipped: the shard already moved past them. Used
    for replicas and for recovering the node's own shard from a peer alike: in both cases the
    lines are the author's, verbatim.

    Unless ``allow_skip``, new ops that skip a seq above the head of a non-empty shard raise
    :class:`SkipsCompacted` and nothing is written. ``consumed`` is the cursor of the pull this
    body belongs to: ops up to it came in earlier pages (stored, or not stored again because
    this node collected them: :mod:`noon.store.forgotten`), so no gap below it is a gap."""
    path = directory / shard_file(node)
    if held is not None and held.shard != path:
        raise ValueError(f"the lock held is {held.shard}, not {path}")
    with contextlib.nullcontext() if held is not None else locked(path):
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            tail = repair_tail(fd, node)
            last = tail.last.seq if tail.last else 0
            skipped = 0
            old = [(line, op) for line, op in ops if op.seq <= last]
            if old:
                buf = _open_map(path)
                try:
                    end = _clean_end(buf)
                    for _line, op in old:
                        mine = _digest_at(buf, end, op.seq)
                        if mine is not None and mine != op.digest:
                            raise ForkDetected(
                                f"forked shard {path.name}: op {node}:{op.seq} received from a "
                                f"peer differs from the one held here (digest {op.digest:016x} "
                                f"vs {mine:016x}); refusing to merge"
                            )
                        skipped += 1
                finally:
                    if isinstance(buf, mmap.mmap):
                        buf.close()
            gone = forgotten.load(directory)
            new = [(line, op) for line, op in ops if op.seq > last]
            fresh = [line + b"\n" for line, op in new if not gone.covers(op)]
            skipped += len(new) - len(fresh)
            if last and not allow_skip:
                expect = max(last, consumed) + 1
                for _, op in ops:
                    if op.seq >= expect:
                        if op.seq != expect:
                            raise SkipsCompacted(node, expect - 1, op.seq)
                        expect += 1
            if fresh:
                write_all(fd, b"".join(fresh))
                if fsync:
                    os.fsync(fd)
                    if created:
                        fsync_dir(directory)
            head = max([last] + [op.seq for _, op in ops])
        finally:
            os.close(fd)
    return Appended(len(fresh), skipped, head)


def _decoded(raw: bytes) -> list[tuple[bytes, Op]]:
    out = []
    for line in raw.splitlines():
        if line.strip():
            try:
                out.append((line, decode(line)))
            except OpError:
                continue
    return out


def _ops_on(directory: Path, keys: set[Key], *, besides: Path) -> list[Op]:
    """Every op held in ``directory`` on one of ``keys``, in any shard but ``besides``."""
    return [
        op
        for shard in directory.glob("*.jsonl")
        if shard != besides
        for _, op in _decoded(shard.read_bytes())
        if op.el in keys
    ]


def replace(directory: Path, node: str, fetched: Path, *, fsync: bool) -> bool:
    """Merge ``fetched`` (a peer's whole copy of ``node``'s shard, validated complete lines)
    into this replica, atomically; see :class:`SkipsCompacted`. Not done when the shard
    meanwhile got past the copy's head. Holds the directory's maintenance lock, so no
    compaction or collection plans on the copy being replaced.

    The result is the peer's copy, except at or below our old head: there an op we no longer
    hold never comes back (we removed it: tombstone collection relies on that, PROTOCOL.md
    §11.3), and an op the peer no longer holds goes when it would otherwise be a stale head
    and its going exposes nothing (:func:`~noon.core.compaction.stale_after_refetch`)."""
    path = directory / shard_file(node)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.merge.tmp")
    try:
        with maintenance(directory), locked(path):
            theirs = _decoded(fetched.read_bytes())
            mine = _decoded(path.read_bytes()) if path.exists() else []
            ours = {op.seq: (line, op) for line, op in mine}
            head = max(ours, default=0)
            if not theirs or head > theirs[-1][1].seq:
                return False
            merged: dict[int, bytes] = {}
            kept: list[Op] = []
            gone = forgotten.load(directory)
            for line, op in theirs:
                held = ours.get(op.seq)
                if op.seq > head:
                    if not gone.covers(op):
                        merged[op.seq] = line
                        kept.append(op)
                elif held is not None:
                    if held[1].digest != op.digest:
                        raise ForkDetected(
                            f"forked shard {path.name}: op {node}:{op.seq} of the peer's copy "
                            "differs from the one held here; refusing to merge"
                        )
                    merged[op.seq] = line
                    kept.append(op)
            missing = [op for seq, (_, op) in ours.items() if seq not in merged and op.known]
            keys = {op.el for op in missing}
            stale = stale_after_refetch(
                missing,
                [op for op in kept if op.el in keys] + _ops_on(directory, keys, besides=path),
            )
            for seq, (line, op) in ours.items():
                if seq not in merged and op.id not in stale:
                    merged[seq] = line
            with open(tmp, "wb") as out:
                out.write(b"".join(merged[seq] + b"\n" for seq in sorted(merged)))
                out.flush()
                if fsync:
                    os.fsync(out.fileno())
            os.replace(tmp, path)
            fsync_dir(directory)
            return True
    finally:
        fetched.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
