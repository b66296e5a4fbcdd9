"""A read model's rows as a comparable value: every table row for row, element ids and row ids
aside (they number rows in the order a fold met them), and the memory index word by word. Two
folds of the same ops, however split, must give equal snapshots."""

from __future__ import annotations

import sqlite3
from typing import Any

KEYED = "(SELECT key FROM elements e WHERE e.id = {}.eid)"
SNAPSHOT = {
    "ops": "SELECT node, seq, digest, hlc, ns, tomb, val, at, prev, client, bat, via, child, "
    + KEYED.format("ops")
    + " FROM ops",
    "elements": "SELECT key, kind, ns, w_node, w_seq, w_hlc, deleted, nheads FROM elements",
    "heads": "SELECT " + KEYED.format("heads") + ", node, seq FROM heads",
    "highwater": "SELECT * FROM highwater",
    "memories": "SELECT ns, node, deleted, text, w_node, w_seq, w_hlc FROM memories",
    "placements": "SELECT * FROM placements",
    "keywords": "SELECT * FROM keywords",
    "boot": "SELECT * FROM boot",
    "memory_docs": "SELECT m.ns, m.node, d.uri, d.disclosure, d.keywords FROM memory_docs d "
    "LEFT JOIN memories m ON m.id = d.id",
    "entities": "SELECT ns, name, type, after, w_hlc, w_node, w_seq FROM entities",
    "observations": "SELECT * FROM observations",
    "relations": "SELECT * FROM relations",
    "reviews": "SELECT * FROM reviews",
    "entity_docs": "SELECT e.ns, e.name, f.doc FROM entity_fts f "
    "LEFT JOIN entities e ON e.id = f.rowid",
}


def snapshot(conn: sqlite3.Connection) -> dict[str, Any]:
    out: dict[str, Any] = {
        name: sorted(conn.execute(sql).fetchall(), key=repr) for name, sql in SNAPSHOT.items()
    }
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_words USING fts5vocab(main, memory_fts, "
        "'instance')"
    )
    out["memory_words"] = conn.execute(
        "SELECT term, m.ns, m.node, col, offset FROM temp.fts_words w "
        "LEFT JOIN memories m ON m.id = w.doc ORDER BY 1, 2, 3, 4, 5"
    ).fetchall()
    return out
