"""The op log as the read model holds it: the newest changes of a namespace, and every version
of the elements that make up one memory or one entity (``noon log``, ``noon history``, history
views and rollback).

What is listed is what the shards hold now: a version that compaction dropped is gone for every
process alike, whenever it started.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from noon.core.elements import EDGE, ENTITY, KEYWORD, OBS, REL, boot_key, content_key
from noon.core.ops import Key, Op
from noon.store.readmodel.rows import ROW, key_of, key_text, op_of


def newest(
    conn: sqlite3.Connection,
    ns: str,
    limit: int,
    *,
    node: str | None = None,
    client: str | None = None,
) -> list[Op]:
    """The ``limit`` newest ops of namespace ``ns`` by ``(hlc, node, seq)``, optionally only
    those written on machine ``node`` or by ``client``."""
    where, args = ["ns = ?"], [ns]
    if node is not None:
        where.append("node = ?")
        args.append(node)
    if client is not None:
        where.append("client = ?")
        args.append(client)
    rows = conn.execute(
        f"SELECT {ROW} FROM ops WHERE {' AND '.join(where)} "
        "ORDER BY hlc DESC, node DESC, seq DESC LIMIT ?",
        (*args, limit),
    )
    return [op_of(row) for row in rows]


def versions(conn: sqlite3.Connection, keys: Iterable[Key]) -> list[Op]:
    """Every version held of ``keys``, newest first."""
    ops = [
        op_of(row)
        for key in keys
        for row in conn.execute(f"SELECT {ROW} FROM ops WHERE key = ?", (key_text(key),))
    ]
    ops.sort(key=lambda o: o.order, reverse=True)
    return ops


def memory_keys(conn: sqlite3.Connection, ns: str, node: str) -> list[Key]:
    """Every element that is part of memory ``node``: its content, every placement that ever
    put it somewhere (while a version of it is held), its keywords and its boot membership."""
    keys: list[Key] = [content_key(ns, node), boot_key(ns, node)]
    keys += [
        key_of(k)
        for (k,) in conn.execute(
            "SELECT key FROM elements WHERE ns = ? AND kind = ? AND json_extract(key, '$[3]') = ?",
            (ns, KEYWORD, node),
        )
    ]
    keys += [
        key_of(k)
        for (k,) in conn.execute(
            "SELECT DISTINCT key FROM ops WHERE ns = ? AND key LIKE ? "
            "AND json_extract(val, '$.child') = ? ORDER BY key",
            (ns, f'["{EDGE}",%', node),
        )
    ]
    return keys


def entity_keys(conn: sqlite3.Connection, ns: str, name: str) -> list[Key]:
    """The entity's element, its observations, and the relations starting or ending at it."""
    found = [
        key_of(k)
        for (k,) in conn.execute(
            "SELECT key FROM elements WHERE ns = ? AND kind IN (?, ?) "
            "AND json_extract(key, '$[2]') = ?",
            (ns, ENTITY, OBS, name),
        )
    ]
    found += [
        key_of(k)
        for (k,) in conn.execute(
            "SELECT key FROM elements WHERE ns = ? AND kind = ? "
            "AND (json_extract(key, '$[2]') = ? OR json_extract(key, '$[3]') = ?)",
            (ns, REL, name, name),
        )
    ]
    return sorted(found)
