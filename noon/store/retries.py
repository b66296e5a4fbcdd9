"""A retry of a call whose answer was lost: recognised, and answered from what the call wrote,
instead of written a second time.

An agent cannot tell a call that failed from one that was written and whose answer was lost
(``noon serve`` killed after the fsync, a connection cut): it calls again. For a call that is
not idempotent (``create_memory`` without a title takes the next number, an ``append`` adds its
text again) that retry would write a duplicate. So the edge that dispatches calls names each
such call by a *request key* (:func:`request_key`: the tool, its arguments, the namespace and
the client) for the call's duration (:func:`requesting`), and :meth:`Store.write
<noon.store.store.Store.write>` records the key on the first op of the batch it writes (``req``,
PROTOCOL.md §1.1). Before planning, and again under the shard's lock, the store looks for the
key in the own shard's tail (:func:`earlier_batch`, read incrementally by :class:`Recent`):
when this node wrote a batch with it within :data:`WINDOW_MS` and that batch still stands
(:func:`stands`), nothing is planned or written, and
:class:`~noon.store.errors.AlreadyWritten` carries the earlier batch for the edge to answer
from.

A batch *stands* while every op it wrote is still a head of its element: nothing has been
written over it since, and it was not deleted. A memory created and since deleted, or a text
appended and since edited, is written again by the same call, as a new call would be. The
window is ten minutes: a lost answer is retried within seconds to a minute (the MCP TypeScript
SDK times a request out after 60 s; a host restarts a dead server at once), and by a person
within minutes; a deliberate second identical call after the window writes again, and within it an
agent is told how to write it again on purpose (change an argument, or wait until the time
said). Two sessions of one client sending the identical call within the window get one write:
that is the price of recognising a retry that arrives on a new connection.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import orjson

from noon.core.chain import STUB_PREFIX
from noon.core.ops import Op, OpError, decode
from noon.store.lines import Buffer, envelope, first_after, lines_backwards, lines_forwards
from noon.store.readmodel.state import head_ids

WINDOW_MS = 10 * 60_000
"""How long after a call its retry is answered from what it wrote (see the module docstring)."""
FIELD = "req"
KEY_CHARS = 32
KEY = re.compile(f"[0-9a-f]{{{KEY_CHARS}}}")


@dataclass
class Request:
    """The call being served, by its key. ``written`` once its batch is on disk: a second write
    within one call is a write of its own, not a retry."""

    key: str
    written: bool = False


_current: ContextVar[Request | None] = ContextVar("noon_request", default=None)


def request_key(tool: str, args: Mapping[str, Any], namespace: str, client: str) -> str:
    """The key of a call: equal for a retry of it (arguments in any order, unset ones left out)
    and different for any other call, namespace or client."""
    given = {k: v for k, v in args.items() if v is not None}  # json: integers of any size
    body = json.dumps([tool, given, namespace, client], sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(body.encode(), digest_size=KEY_CHARS // 2).hexdigest()


@contextmanager
def requesting(key: str | None) -> Iterator[None]:
    """Serve one call under ``key`` (None: a call no retry can duplicate). A context variable,
    so the key reaches the write path through the tool's body and the worker thread it runs
    in, without every layer between passing it on."""
    if key is not None and not KEY.fullmatch(key):
        raise ValueError(f"a request key is {KEY_CHARS} lowercase hex digits, not {key[:80]!r}")
    token = _current.set(Request(key) if key is not None else None)
    try:
        yield
    finally:
        _current.reset(token)


def pending() -> Request | None:
    """The call being served, until its batch is written."""
    request = _current.get()
    return None if request is None or request.written else request


def stamp_of(raw: bytes) -> int | None:
    """A line's HLC stamp; None for a stub (stamped 0: it stands for dropped lines) or a line
    that is not an op."""
    if raw.startswith(STUB_PREFIX):
        return None
    try:
        hlc = orjson.loads(raw).get("hlc")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return hlc if type(hlc) is int else None


def earlier_batch(buf: Buffer, end: int, node: str, key: str, since_ms: int) -> list[Op] | None:
    """The last whole batch ``node`` wrote with ``key`` at or after ``since_ms``, in seq order,
    from its own shard's bytes ``buf[:end]``; None when there is none. A batch not whole (torn by
    a crash, still being written, or partly dropped by a compaction, which drops only what was
    written over) is passed over. Costs a binary search and a scan of the lines written since
    ``since_ms``."""
    start = first_after(buf, end, (since_ms << 16) - 1, stamp_of)
    needle = b'"' + FIELD.encode() + b'":"' + key.encode() + b'"'
    hit = buf.rfind(needle, start, end)
    while hit >= 0:
        pos = buf.rfind(b"\n", 0, hit) + 1
        batch = _whole_batch(buf, pos, end, node, key, since_ms)
        if batch is not None:
            return batch
        hit = buf.rfind(needle, start, pos)
    return None


class Recent:
    """:func:`earlier_batch` for one process's writes, reading each byte of the own shard once:
    the request keys of the lines written within the window, by the offset of their line, grown
    by the bytes appended since the last look. A shard that is not the one read before (a
    compaction's new file), got shorter or changed before where it was read to (a torn batch cut
    and written over) is read again from the window's start."""

    MAX_KEYS = 100_000
    """Keys held at most before starting again from the window's start (a memory bound)."""

    def __init__(self) -> None:
        self.file: tuple[int, int] | None = None
        self.end = 0
        self.tail = b""
        self.at: dict[str, list[int]] = {}
        self.held = 0

    def batch(
        self, buf: Buffer, end: int, file: tuple[int, int], node: str, key: str, since_ms: int
    ) -> list[Op] | None:
        """As :func:`earlier_batch`; ``file`` names the shard file read (device, inode)."""
        if (
            file != self.file
            or end < self.end
            or buf[self.end - len(self.tail) : self.end] != self.tail
            or self.held > self.MAX_KEYS
        ):
            self.file, self.at, self.held = file, {}, 0
            self.end = first_after(buf, end, (since_ms << 16) - 1, stamp_of)
        done = _complete_end(buf, self.end, end)  # a writer may still cut what follows
        for found in KEYED.finditer(buf, self.end, done):
            self.at.setdefault(found.group(1).decode(), []).append(
                buf.rfind(b"\n", 0, found.start()) + 1
            )
            self.held += 1
        self.end = done
        self.tail = bytes(buf[max(0, done - TAIL) : done])
        for pos in reversed(self.at.get(key, ())):
            batch = _whole_batch(buf, pos, end, node, key, since_ms)
            if batch is not None:
                return batch
        return None


def _complete_end(buf: Buffer, start: int, end: int) -> int:
    """Where the last whole batch of ``buf[start:end]`` ends: the lines of an unfinished batch
    after it are the only ones a writer repairing the shard cuts (and writes over)."""
    unfinished: int | None = None
    pos = end
    for line_start, raw in lines_backwards(buf, end):
        if line_start < start:
            break
        env = envelope(raw)
        bat = env.bat if env is not None else None
        if env is None or bat is None or env.seq >= bat:
            return pos
        if unfinished not in (None, bat):
            return pos
        unfinished, pos = bat, line_start
    return max(pos, start)


KEYED = re.compile(f'"{FIELD}":"({KEY.pattern})"'.encode())
TAIL = 64
"""Bytes before where a shard was read to that must be unchanged to read on from there."""


def _whole_batch(
    buf: Buffer, pos: int, end: int, node: str, key: str, since_ms: int
) -> list[Op] | None:
    """The batch whose first line starts at ``pos`` and names ``key``, if it is whole."""
    ops: list[Op] = []
    for _, raw in lines_forwards(buf, pos, end):
        try:
            op = decode(raw)
        except OpError:
            return None
        if not ops:
            if op.node != node or orjson.loads(raw).get(FIELD) != key or op.hlc >> 16 < since_ms:
                return None
        elif op.seq != ops[-1].seq + 1 or op.bat != ops[0].bat:
            return None
        ops.append(op)
        if op.seq >= (ops[0].bat or ops[0].seq):
            return ops
    return None


def stands(conn: sqlite3.Connection, batch: list[Op]) -> bool:
    """Whether every op of ``batch`` is still a head of its element in the read model."""
    heads = head_ids(conn, [op.el for op in batch])
    return all(op.id in heads.get(op.el, ()) for op in batch)
