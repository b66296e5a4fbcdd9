"""Rows inserted without binding NULLs (:mod:`noon.store.readmodel.bulk`) are stored exactly as
a plain ``executemany`` binding every ``None`` stores them, whatever columns are NULL."""

from __future__ import annotations

import sqlite3
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from noon.store.readmodel.bulk import insert

COLUMNS = ["k", "a", "b", "c", "d"]
cells = st.one_of(
    st.none(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8), st.binary(max_size=8)
)
rows = st.lists(st.tuples(cells, cells, cells, cells), max_size=40)


def _table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, a, b, c, d)")
    return conn


def _stored(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT k, a, typeof(a), b, typeof(b), c, typeof(c), d, typeof(d) FROM t ORDER BY k"
    ).fetchall()


@given(rows)
def test_insert_stores_what_binding_every_none_stores(given_rows: list[tuple[Any, ...]]) -> None:
    keyed = [(i, *row) for i, row in enumerate(given_rows)]
    plain, bulk = _table(), _table()
    plain.executemany("INSERT INTO t (k, a, b, c, d) VALUES (?,?,?,?,?)", keyed)
    insert(bulk, "t", COLUMNS, keyed)
    assert _stored(bulk) == _stored(plain)
    assert len(_stored(bulk)) == len(keyed)


def test_a_group_keeps_its_rows_order() -> None:
    """Rows of one shape are inserted in the order given (a fold writes them in key order)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k, a, b, c, d)")
    given_rows = [(3, 1, None, None, None), (1, None, 2, None, None), (2, 1, None, None, None)]
    insert(conn, "t", COLUMNS, given_rows)
    assert conn.execute("SELECT k FROM t WHERE a = 1 ORDER BY rowid").fetchall() == [(3,), (2,)]
