"""Bulk inserts that never bind a NULL.

Python's ``sqlite3`` binds an ``int``, ``float``, ``str`` or ``bytes`` directly, but looks a
``None`` up in its adaptation protocols first (``__adapt__``, ``__conform__``: failed attribute
lookups), which costs about 0.7 µs per NULL on this machine's Python 3.11: more than SQLite
spends storing a small column. An ``ops`` row of the fold has four to six NULLs (the value of a
long op, the offset of a short one, ``prev``, ``bat``, ``via``, ``child``), so binding them was
about half of the row's cost (docs/performance.md, "Bulk folds, fourth round").

:func:`insert` groups the rows by which columns are NULL and inserts each group with a statement
that names only the others: an omitted column is NULL (no column of the read model has another
default), so what is stored is the same. Rows of one group keep their order; groups do not keep
theirs relative to each other, so this is for plain inserts of distinct keys, not for
``INSERT OR REPLACE`` of rows that may repeat a key.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import is_not
from typing import Any


def insert(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> None:
    """``INSERT INTO table (columns) VALUES (...)`` for every row, no ``None`` bound."""
    nulls = (None,) * len(columns)
    groups: dict[tuple[bool, ...], list[tuple[Any, ...]]] = {}
    for row in rows:
        present = tuple(map(is_not, row, nulls))
        group = groups.get(present)
        if group is None:
            group = groups[present] = []
        group.append(tuple(compress(row, present)))
    for present, group in groups.items():
        named = list(compress(columns, present))
        marks = ",".join("?" * len(named))
        conn.executemany(f"INSERT INTO {table} ({', '.join(named)}) VALUES ({marks})", group)
