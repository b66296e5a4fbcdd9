"""The shard line format as bytes: the rules every reader and writer of a shard shares.

- A line's *envelope* (``node``, ``seq``, ``bat``) is enough to page, summarise and gate a shard
  whose lines were validated on the way in; :func:`envelope` reads just that.
- The *batch gate*: ops of a batch (``bat > seq``) count only once an op of the same author with
  ``seq >= bat`` follows them. :class:`BatchGate` applies it forwards (reading a shard from a
  point), :func:`last_complete` backwards (finding the highest complete op from the end).
- A line's *digest* is :func:`noon.core.ops.line_digest` (which normalises trailing white
  space): :func:`digest` is the one way this package computes it.

Everything here works on ``bytes`` or a read-only ``mmap`` alike and does no I/O.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

import orjson

from noon.core.chain import STUB_PREFIX, parse_stub
from noon.core.ops import line_digest

Buffer = bytes | mmap.mmap
T = TypeVar("T")


class Envelope(NamedTuple):
    """A tuple, not a dataclass: a page served reads one per line (a frozen dataclass took
    0.66 µs to build, three quarters of orjson's time to parse a 300-byte line)."""

    node: str
    seq: int
    bat: int | None


def envelope(raw: bytes) -> Envelope | None:
    """The envelope of a stored line, or None for a blank or undecodable one."""
    try:
        obj = orjson.loads(raw)  # blank: not JSON either
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    node, seq, bat = obj.get("node"), obj.get("seq"), obj.get("bat")
    if type(seq) is not int or not isinstance(node, str):
        return None
    return Envelope(node, seq, bat if type(bat) is int else None)


def digest(raw: bytes) -> int:
    """The digest of a line (with or without its newline); a stub's is the digest of the line
    it replaced (:func:`noon.core.ops.stub_digest`)."""
    if raw.startswith(STUB_PREFIX):
        stub = parse_stub(raw.rstrip(b"\r\n\t "))
        if stub is not None and stub.digest:
            return stub.digest
    return line_digest(raw)


def clean_end(buf: Buffer) -> int:
    """Offset just after the last newline: bytes after it are a torn write."""
    return buf.rfind(b"\n") + 1


def line_at(buf: Buffer, pos: int, end: int) -> tuple[int, bytes]:
    """The line starting at ``pos``: (offset after its newline, bytes without the newline)."""
    nl = buf.find(b"\n", pos, end)
    return nl + 1, bytes(buf[pos:nl])


def lines_forwards(buf: Buffer, pos: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines of ``[pos, end)``: (offset after the line, bytes without the newline)."""
    while pos < end:
        nxt, raw = line_at(buf, pos, end)
        yield nxt, raw
        pos = nxt


def lines_backwards(buf: Buffer, end: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines of ``[0, end)`` from the last to the first: (start offset, bytes without
    the newline). ``end`` must sit just after a newline (or be 0)."""
    pos = end
    while pos > 0:
        start = buf.rfind(b"\n", 0, pos - 1) + 1
        yield start, bytes(buf[start : pos - 1])
        pos = start


def seq_of(raw: bytes) -> int | None:
    """A stored line's seq, or None for a blank or undecodable one."""
    env = envelope(raw)
    return None if env is None else env.seq


def first_after(
    buf: Buffer, end: int, after: int, value: Callable[[bytes], int | None] = seq_of
) -> int:
    """Offset of the first line whose ``value`` (its seq unless told) is greater than ``after``
    (``end`` when none): a binary search, since a shard holds its author's ops in increasing
    seq order (and stamp order). Lines without a value are passed over."""
    lo, hi = 0, end  # invariant: the answer is a line start in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        start = 0 if mid == 0 else buf.rfind(b"\n", 0, mid) + 1
        found: int | None = None
        pos = start
        for nxt, raw in lines_forwards(buf, start, hi):
            found = value(raw)
            if found is not None:
                break
            pos = nxt
        if found is None or found > after:
            hi = start
        else:
            lo = line_at(buf, pos, end)[0]
    return lo


def digest_at(buf: Buffer, end: int, seq: int) -> int | None:
    """The digest of the op with ``seq``, or None when the buffer lacks it."""
    pos = first_after(buf, end, seq - 1)
    if pos >= end:
        return None
    _, raw = line_at(buf, pos, end)
    env = envelope(raw)
    if env is None or env.seq != seq:
        return None
    return digest(raw)


class BatchGate(Generic[T]):
    """The batch gate, forwards: feed a shard's ops in file order; each call returns the items
    that became visible (an op outside a batch at once, a batch's ops together once the op
    completing it arrives), and holds the rest."""

    __slots__ = ("_author", "_held", "_until")

    def __init__(self) -> None:
        self._held: list[T] = []
        self._until = 0
        self._author = ""

    @property
    def open(self) -> bool:
        """A batch is being held: its end has not been read yet."""
        return bool(self._held)

    def feed(self, item: T, node: str, seq: int, bat: int | None) -> list[T]:
        if self._held:
            self._held.append(item)
            if node == self._author:
                if bat is not None:
                    self._until = max(self._until, bat)
                if seq >= self._until:
                    done, self._held = self._held, []
                    return done
            return []
        if bat is not None and bat > seq:
            self._held, self._until, self._author = [item], bat, node
            return []
        return [item]


@dataclass
class Gated(Generic[T]):
    """What :func:`last_complete` found."""

    last: T | None
    """The last complete entry (None: the shard holds none)."""
    unfinished: list[T] = field(default_factory=list)
    """Entries of unfinished batches after it, from the last to the first."""


def last_complete(entries: Iterable[tuple[T, Envelope | None]]) -> Gated[T]:
    """The batch gate, backwards: ``entries`` from the end of a shard towards its start (None
    envelopes are skipped); stops at the first op not inside an unfinished trailing batch."""
    gated: Gated[T] = Gated(None)
    pending: int | None = None
    for item, env in entries:
        if env is None:
            continue
        if pending is not None and env.bat == pending:
            gated.unfinished.append(item)
            continue
        if env.bat is not None and env.bat > env.seq:
            pending = env.bat
            gated.unfinished.append(item)
            continue
        gated.last = item
        break
    return gated
