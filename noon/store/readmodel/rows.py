"""How ops and element keys are written to and read back from the read model's rows.

An element key is stored as its canonical JSON text (a list of strings): unique per key, the
same in every process, once, in ``elements`` (an op row names its element by id). An op is
stored by identity with the columns the fold and the op log use without decoding anything
(``hlc``, ``tomb`` for a tombstone, ``prev``, ``client``, ``bat``, ``via``) and its value as
JSON. The digest is the author's line digest: a duplicate
and a fork tell themselves apart by it, as in :mod:`noon.core.fold`.

A value of :data:`PACK_MIN` bytes or more (a memory's text) is not stored: the row keeps where
the op's line starts in its author's shard (``at``), and SQL reads the value through
``op_val(val, node, at, digest)`` (:mod:`.shardvalues`): the op log keeps every version of
every text, and the shards hold them already.
"""

from __future__ import annotations

from typing import Any

import orjson

from noon.core.elements import EDGE
from noon.core.ops import Key, Op, OpId
from noon.errors import Unavailable

KEY = "(SELECT key FROM elements WHERE id = ops.eid)"
"""An ``ops`` row's element key text (``ops`` holds the element's id only): SQL over ``ops``."""
VAL = "op_val(val, node, at, digest)"
"""An ``ops`` row's value as JSON text (NULL for a tombstone): SQL over ``ops``."""
ROW = f"node, seq, digest, hlc, ns, {KEY}, tomb, {VAL}, prev, client, bat, via"
"""What :func:`op_of` reads, in its order, from ``ops`` (the table named so, not aliased)."""
COLUMNS = "node, seq, digest, hlc, ns, tomb, val, at, prev, client, bat, via, eid, child"
"""What :func:`op_row` writes: the op, the id of its element and, for a placement (an ``edge``
op with a value), the memory it places."""
INSERT = (
    f"INSERT INTO ops ({COLUMNS}) VALUES (?, ?, ?, ?, nullif(?, 0), ?, nullif(?, 0), "
    "nullif(?, -1), nullif(?, 0), nullif(?, 0), nullif(?, 0), nullif(?, 0), nullif(?, 0), "
    "nullif(?, 0))"
)
"""The statement that inserts an :func:`op_row` row.

Python's ``sqlite3`` binds an ``int`` or ``str`` directly but looks a ``None`` up in its
adaptation protocols first (failed attribute lookups), about 0.7 µs a NULL on Python 3.11,
more than SQLite spends storing a small column; a fold's row has four to five NULLs. So
:func:`op_row` gives a stand-in the column can never hold (0 for a text column: an integer
never equals a text in SQL; -1 for a byte offset; 0 for a seq or an element id, which start
at 1) and ``nullif`` stores NULL for it. Grouping the rows by which columns are NULL, one
statement per shape, was tried: it saves the binding but inserts each shape apart, out of
key order, and costs as much in the B-trees (``bench/ops_rows.py``)."""

_SIGN = 1 << 63
_LIVE: dict[str, Any] = {}
PACK_MIN = 96
"""Values this long or longer (JSON bytes) are read from the shard, not stored."""


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


def op_row(op: Op, eid: int | None, at: int | None) -> tuple[Any, ...]:
    """The row of ``op`` for :data:`INSERT` (NULLs as its stand-ins), whose element has id
    ``eid`` (None for an op of a kind this version does not know) and whose line starts at
    byte ``at`` of its author's shard."""
    known = op.known
    val: str | None = None
    if known and op.val is not None:
        raw = orjson.dumps(op.val)
        if len(raw) < PACK_MIN or at is None:
            val, at = raw.decode(), None
    else:
        at = None
    prev = _prev_text(op.prev)
    child = _child(op) if known else None
    return (
        op.node,
        op.seq,
        signed(op.digest),
        op.hlc,
        op.el[1] if known else 0,
        int(op.val is None),
        0 if val is None else val,
        -1 if at is None else at,
        0 if prev is None else prev,
        0 if op.by is None else op.by,
        0 if op.bat is None else op.bat,
        0 if op.via is None else op.via,
        0 if eid is None else eid,
        0 if child is None else child,
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
        None if tomb else _value(node, seq, val),
        _prev_of(prev),
        client,
        bat,
        True,
        unsigned(digest),
        via,
    )


def _value(node: str, seq: int, val: str | None) -> Any:
    if val is None:
        raise Unavailable(
            f"the version {node}:{seq} left its shard (a compaction) while it was read: "
            "read it again"
        )
    return orjson.loads(val)


def skeleton(node: str, seq: int, hlc: int, key: Key, tomb: int, prev: str | None) -> Op:
    """An op with all the fold decides on (identity, stamp, liveness, prev) and a placeholder
    value: enough to recompute an element's heads and winner without loading every value."""
    return Op(node, seq, hlc, key, None if tomb else _LIVE, _prev_of(prev), None, None, True, 0)
