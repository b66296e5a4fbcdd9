"""The op log as the read model holds it: the newest changes of a namespace, and every version
of the elements that make up one memory or one entity (``noon log``, ``noon history``, history
views and rollback).

What is listed is what the shards hold now: a version that compaction dropped is gone for every
process alike, whenever it started.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from noon.core.elements import KEYWORD, OBS, REL, boot_key, content_key, entity_key
from noon.core.ops import Key, Op
from noon.store.readmodel.rows import KEY, ROW, key_of, key_text, op_of


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
        for row in conn.execute(
            f"SELECT {ROW} FROM ops WHERE eid = (SELECT id FROM elements WHERE key = ?)",
            (key_text(key),),
        )
    ]
    ops.sort(key=lambda o: o.order, reverse=True)
    return ops


def _under(
    conn: sqlite3.Connection, parts: tuple[str, ...], where: str = "", *args: str
) -> list[Key]:
    """Element keys that start with ``parts`` (a range of the key index, since a key's text is
    its JSON list), optionally filtered by ``where``."""
    low = key_text(parts)[:-1] + ","
    high = low[:-1] + chr(ord(",") + 1)
    sql = "SELECT key FROM elements WHERE key >= ? AND key < ?" + (f" AND {where}" if where else "")
    return [key_of(k) for (k,) in conn.execute(sql, (low, high, *args))]


def memory_keys(conn: sqlite3.Connection, ns: str, node: str) -> list[Key]:
    """Every element that is part of memory ``node``: its content, every placement that ever
    put it somewhere (while a version of it is held), its keywords and its boot membership."""
    keys: list[Key] = [content_key(ns, node), boot_key(ns, node)]
    keys += _under(conn, (KEYWORD, ns), "json_extract(key, '$[3]') = ?", node)
    keys += [
        key_of(k)
        for (k,) in conn.execute(
            f"SELECT DISTINCT {KEY} AS k FROM ops WHERE ns = ? AND child = ? ORDER BY k",
            (ns, node),
        )
    ]
    return keys


def entity_keys(conn: sqlite3.Connection, ns: str, name: str) -> list[Key]:
    """The entity's element, its observations, and the relations starting or ending at it."""
    entity = entity_key(ns, name)
    held = conn.execute("SELECT 1 FROM elements WHERE key = ?", (key_text(entity),)).fetchone()
    found = [entity] if held else []
    found += _under(conn, (OBS, ns, name))
    found += _under(conn, (REL, ns, name))
    found += _under(conn, (REL, ns), "json_extract(key, '$[3]') = ?", name)
    return sorted(set(found))
