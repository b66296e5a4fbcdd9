"""An op stored in the read model reads back as the op folded: its value whether it was kept
as JSON text or deflated, and ``unpacked(val)`` gives SQL the same JSON."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from noon.core.ops import Op
from noon.store.readmodel.rows import (
    COLUMNS,
    PACK_MIN,
    ROW,
    key_text,
    op_of,
    op_row,
    pack,
    register,
)
from noon.store.readmodel.schema import TABLES

texts = st.text(max_size=400)
values = st.one_of(
    st.fixed_dictionaries({"text": texts}),
    st.fixed_dictionaries(
        {"child": st.text(max_size=30), "priority": st.integers(0, 9), "disclosure": texts}
    ),
    st.dictionaries(
        st.text(max_size=10), st.one_of(texts, st.integers(-(2**63), 2**63 - 1), st.booleans())
    ),
)


@given(values)
def test_a_value_reads_back_as_written_packed_or_not(val: dict[str, Any]) -> None:
    stored = pack(val)
    raw = orjson.dumps(val)
    if isinstance(stored, bytes):
        assert len(raw) >= PACK_MIN and len(stored) < len(raw)
    else:
        assert stored == raw.decode()
    op = Op("n1", 3, 1 << 20, ("content", "default", "x"), val, None, "c", 3, True, 7, None)
    conn = sqlite3.connect(":memory:")
    register(conn)
    conn.executescript(TABLES)
    conn.execute("INSERT INTO elements (id, key) VALUES (7, ?)", (key_text(op.el),))
    conn.execute(f"INSERT INTO ops ({COLUMNS}) VALUES ({','.join('?' * 13)})", op_row(op, 7))
    back = op_of(conn.execute(f"SELECT {ROW} FROM ops").fetchone())
    assert _fields(back) == _fields(op)
    (json,) = conn.execute("SELECT unpacked(?)", (stored,)).fetchone()
    assert orjson.loads(json) == val


def _fields(op: Op) -> tuple[Any, ...]:
    return (op.node, op.seq, op.hlc, op.el, op.val, op.prev, op.by, op.bat, op.digest, op.via)


def test_long_repetitive_text_is_stored_smaller() -> None:
    stored = pack({"text": "the same words again and again " * 20})
    assert isinstance(stored, bytes) and len(stored) < 200
