"""Counts the web page shows beside the URI graph: the namespaces in use, and how many children
each memory of a page has (one grouped query instead of reading every child's row)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

_DISTINCT_NS = """
WITH RECURSIVE walk(ns) AS (
    SELECT min(ns) FROM {table}
    UNION ALL
    SELECT (SELECT min(ns) FROM {table} WHERE ns > walk.ns) FROM walk WHERE walk.ns IS NOT NULL
)
SELECT ns FROM walk WHERE ns IS NOT NULL
"""


def namespaces(conn: sqlite3.Connection) -> set[str]:
    """Namespaces holding a memory (live or deleted) or a live entity: one index seek per
    namespace, whatever the number of memories."""
    found: set[str] = set()
    for table in ("memories", "entities"):
        found.update(ns for (ns,) in conn.execute(_DISTINCT_NS.format(table=table)))
    return found


def child_counts(conn: sqlite3.Connection, ns: str, nodes: Iterable[str]) -> dict[str, int]:
    """How many placements each of ``nodes`` (memories or domain roots) holds."""
    wanted = sorted(set(nodes))
    out = dict.fromkeys(wanted, 0)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for parent, count in conn.execute(
            f"SELECT parent, count(*) FROM placements WHERE ns = ? AND parent IN ({marks}) "
            "GROUP BY parent",
            (ns, *chunk),
        ):
            out[parent] = int(count)
    return out
