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
key in the own shard's tail (:func:`earlier_batch`): when this node wrote a batch with it within
:data:`WINDOW_MS` and that batch still stands (:func:`stands`), nothing is planned or written,
and :class:`~noon.store.errors.AlreadyWritten` carries the earlier batch for the edge to answer
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
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import orjson

from noon.core.chain import STUB_PREFIX
from noon.core.ops import Op, OpError, decode
from noon.store.lines import Buffer, first_after, lines_forwards
from noon.store.readmodel.state import head_ids

WINDOW_MS = 10 * 60_000
"""How long after a call its retry is answered from what it wrote (see the module docstring)."""
FIELD = "req"
KEY_CHARS = 32


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
