"""What the web page shows of many memories at once, beside the URI graph: the namespaces in
use, how many children each memory of a page has, and each one's text and state (grouped
queries for a page of memories instead of a few per memory)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from noon.core.elements import content_key
from noon.store.readmodel.rows import key_of, key_text

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


@dataclass(frozen=True)
class Summary:
    """A memory as a list shows it."""

    text: str
    """The text shown: its winner's, or for a deleted memory its last live version's."""
    deleted: bool
    conflicted: bool


def summaries(conn: sqlite3.Connection, ns: str, nodes: Iterable[str]) -> dict[str, Summary]:
    """The memories among ``nodes`` that have a text, in two queries for a page of them."""
    wanted = sorted(set(nodes))
    found: dict[str, Summary] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        conflicted = {
            key_of(k)[2]
            for (k,) in conn.execute(
                f"SELECT key FROM elements WHERE key IN ({marks}) AND nheads > 1",
                [key_text(content_key(ns, n)) for n in chunk],
            )
        }
        for node, text, deleted in conn.execute(
            f"SELECT node, text, deleted FROM memories WHERE ns = ? AND node IN ({marks})",
            (ns, *chunk),
        ):
            found[node] = Summary(text, bool(deleted), node in conflicted)
    return found
