"""How ops and element keys are written to and read back from the read model's rows.

An element key is stored as its canonical JSON text (a list of strings): unique per key, the
same in every process, once, in ``elements`` (an op row names its element by id). An op is
stored by identity with the columns the fold and the op log use without decoding anything
(``hlc``, ``tomb`` for a tombstone, ``prev``, ``client``, ``bat``, ``via``) and its value as
JSON. The digest is the author's line digest: a duplicate
and a fork tell themselves apart by it, as in :mod:`noon.core.fold`.

A value of :data:`PACK_MIN` bytes or more is stored deflated (a BLOB; a shorter one, or one
deflate does not shrink, stays JSON text): the op log keeps every version of every text, and
those are most of the file. SQL that reads a value inside the database calls ``unpacked(val)``
(:func:`register`).
"""

from __future__ import annotations

import sqlite3
import zlib
from typing import Any

import orjson

from noon.core.elements import EDGE
from noon.core.ops import Key, Op, OpId

KEY = "(SELECT key FROM elements WHERE id = ops.eid)"
"""An ``ops`` row's element key text (``ops`` holds the element's id only): SQL over ``ops``."""
ROW = f"node, seq, digest, hlc, ns, {KEY}, tomb, val, prev, client, bat, via"
"""What :func:`op_of` reads, in its order, from ``ops`` (the table named so, not aliased)."""
COLUMNS = "node, seq, digest, hlc, ns, tomb, val, prev, client, bat, via, eid, child"
"""What :func:`op_row` writes: the op, the id of its element and, for a placement (an ``edge``
op with a value), the memory it places."""

_SIGN = 1 << 63
_LIVE: dict[str, Any] = {}
PACK_MIN = 96
"""Values this long or longer are stored deflated."""
_DICTIONARY = b'"disclosure":"priority":"child":"written":"type":{"text":"'
"""What most values start with: deflate refers back to it instead of spelling it out."""


def pack(val: Any) -> str | bytes:
    """A value as stored: JSON text, or its deflated bytes when that is shorter."""
    raw = orjson.dumps(val)
    if len(raw) >= PACK_MIN:
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=_DICTIONARY)
        packed = deflate.compress(raw) + deflate.flush()
        if len(packed) < len(raw):
            return packed
    return raw.decode()


def unpack(stored: str | bytes) -> str | bytes:
    """The JSON text of a stored value (bytes when it was deflated)."""
    if isinstance(stored, str):
        return stored
    inflate = zlib.decompressobj(-15, zdict=_DICTIONARY)
    return inflate.decompress(stored) + inflate.flush()


def _unpacked_sql(stored: str | bytes | None) -> str | None:
    return None if stored is None else _text(unpack(stored))


def _text(raw: str | bytes) -> str:
    return raw if isinstance(raw, str) else raw.decode()


def register(conn: sqlite3.Connection) -> None:
    """``unpacked(val)``: a stored value as JSON text, for SQL that reads inside one."""
    conn.create_function("unpacked", 1, _unpacked_sql, deterministic=True)


def key_text(key: Key) -> str:
    return orjson.dumps(list(key)).decode()


def key_of(text: str) -> Key:
    return tuple(orjson.loads(text))


def signed(digest: int) -> int:
    """SQLite integers are signed 64-bit; digests are unsigned."""
    return digest - (1 << 64) if digest >= _SIGN else digest


def unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


def _prev_text(prev: tuple[OpId, ...] | None) -> str | None:
    return orjson.dumps(prev).decode() if prev else None


def _prev_of(text: str | None) -> tuple[OpId, ...] | None:
    if not text:
        return None
    return tuple((str(n), int(s)) for n, s in orjson.loads(text))


def op_row(op: Op, eid: int | None) -> tuple[Any, ...]:
    """The row of ``op``, whose element has id ``eid`` (None for an op of a kind this version
    does not know)."""
    known = op.known
    return (
        op.node,
        op.seq,
        signed(op.digest),
        op.hlc,
        op.el[1] if known else None,
        int(op.val is None),
        pack(op.val) if known and op.val is not None else None,
        _prev_text(op.prev),
        op.by,
        op.bat,
        op.via,
        eid,
        _child(op) if known else None,
    )


def _child(op: Op) -> str | None:
    child = op.val.get("child") if op.el[0] == EDGE and op.val is not None else None
    return child if isinstance(child, str) else None


def op_of(row: tuple[Any, ...], key: Key | None = None) -> Op:
    """The op of a full ``ops`` row (columns :data:`ROW`). ``key``: its element's, when the
    caller knows it (an element first met in the transaction that reads it has no
    ``elements`` row yet, so :data:`KEY` reads NULL)."""
    node, seq, digest, hlc, _, kt, tomb, val, prev, client, bat, via = row
    return Op(
        node,
        seq,
        hlc,
        key_of(kt) if key is None else key,
        None if tomb else orjson.loads(unpack(val)),
        _prev_of(prev),
        client,
        bat,
        True,
        unsigned(digest),
        via,
    )


def skeleton(node: str, seq: int, hlc: int, key: Key, tomb: int, prev: str | None) -> Op:
    """An op with all the fold decides on (identity, stamp, liveness, prev) and a placeholder
    value: enough to recompute an element's heads and winner without loading every value."""
    return Op(node, seq, hlc, key, None if tomb else _LIVE, _prev_of(prev), None, None, True, 0)
