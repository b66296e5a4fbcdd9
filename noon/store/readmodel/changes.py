"""Changes as a person reviews them, read from the op log: one tool call (the ops of one author
sharing ``bat``) or one lone op, newest first; and the review state written by the web page.

A change's id is ``node:seq`` of its last op (its ``bat``), the same on every machine. Listing
walks the ops of a namespace by stamp, newest first; the first op met of a change is its newest,
so changes come out in the order of their newest op without grouping the whole log. Only ops
the shards still hold are listed: a version compaction dropped is gone from its change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from noon.core.ops import Key, Op
from noon.store.readmodel.rows import ROW, key_text, op_of

UPTO = "upto"
"""The review subject whose value is a watermark: ``{"through": {author: seq}}``."""


def change_id(op: Op) -> str:
    return f"{op.node}:{op.bat or op.seq}"


@dataclass
class Change:
    id: str
    namespace: str
    ops: list[Op]
    """Its ops still held, in seq order (the order its author wrote them)."""

    @property
    def stamp(self) -> tuple[int, str, int]:
        """The greatest ``(hlc, node, seq)`` of its ops: changes are listed by it."""
        return max(op.order for op in self.ops)

    @property
    def author(self) -> str:
        return self.ops[0].node

    @property
    def seq(self) -> int:
        return self.ops[-1].seq

    @property
    def client(self) -> str:
        return self.ops[0].by or "unknown"


def load(conn: sqlite3.Connection, cid: str) -> Change | None:
    """The change ``cid`` (``node:seq``), or None when none of its ops is held."""
    node, _, seq_text = cid.rpartition(":")
    if not seq_text.isdigit():
        return None
    last = int(seq_text)
    ops: list[Op] = []
    cursor = conn.execute(
        f"SELECT {ROW} FROM ops WHERE node = ? AND seq <= ? ORDER BY seq DESC", (node, last)
    )
    while rows := cursor.fetchmany(64):
        for row in rows:
            op = op_of(row) if row[5] is not None else None
            if op is None:
                continue  # an op of a kind this version does not know: not listed
            if (op.bat or op.seq) != last:
                cursor.close()
                return _change(ops)
            ops.append(op)
        if ops and ops[-1].bat is None:
            break  # a lone op is its own change
    return _change(ops)


def _change(ops: list[Op]) -> Change | None:
    if not ops:
        return None
    ops.sort(key=lambda o: o.seq)
    return Change(change_id(ops[-1]), ops[0].el[1], ops)


def newest(
    conn: sqlite3.Connection, ns: str, before: tuple[int, str, int] | None = None
) -> Iterator[Change]:
    """Changes of ``ns``, newest first, each older than ``before`` when given."""
    where, args = "ns = ?", [ns]
    if before is not None:
        where += " AND (hlc < ? OR (hlc = ? AND (node < ? OR (node = ? AND seq < ?))))"
        hlc, node, seq = before
        args += [hlc, hlc, node, node, seq]
    cursor = conn.execute(
        f"SELECT node, seq, bat FROM ops WHERE {where} ORDER BY hlc DESC, node DESC, seq DESC",
        args,
    )
    seen: set[str] = set()
    while rows := cursor.fetchmany(256):
        for node, seq, bat in rows:
            cid = f"{node}:{bat or seq}"
            if cid in seen:
                continue
            seen.add(cid)
            change = load(conn, cid)
            if change is not None and (before is None or change.stamp < before):
                yield change


def touching(conn: sqlite3.Connection, keys: Iterable[Key]) -> list[Change]:
    """Every change holding an op on one of ``keys``, newest first."""
    ids: set[str] = set()
    for key in keys:
        for node, seq, bat in conn.execute(
            "SELECT node, seq, bat FROM ops WHERE eid = (SELECT id FROM elements WHERE key = ?)",
            (key_text(key),),
        ):
            ids.add(f"{node}:{bat or seq}")
    found = [c for c in (load(conn, cid) for cid in ids) if c is not None]
    return sorted(found, key=lambda c: c.stamp, reverse=True)


@dataclass(frozen=True)
class Verdict:
    reviewer: str
    value: dict[str, Any]
    order: tuple[int, str, int]
    """The review op's ``(hlc, node, seq)``: the latest verdict of a change is the one shown."""


def verdicts(conn: sqlite3.Connection, ns: str, ids: Iterable[str]) -> dict[str, list[Verdict]]:
    """The live verdicts on each of the changes ``ids``, by change id."""
    out: dict[str, list[Verdict]] = {}
    for cid in set(ids):
        for reviewer, val, node, seq, hlc in conn.execute(
            "SELECT reviewer, val, w_node, w_seq, w_hlc FROM reviews WHERE ns = ? AND subject = ?",
            (ns, cid),
        ):
            out.setdefault(cid, []).append(Verdict(reviewer, orjson.loads(val), (hlc, node, seq)))
    return out


def through(conn: sqlite3.Connection, ns: str) -> dict[str, int]:
    """Per author, the seq up to which every change is reviewed: the greatest of every
    reviewing machine's watermark."""
    out: dict[str, int] = {}
    for (val,) in conn.execute("SELECT val FROM reviews WHERE ns = ? AND subject = ?", (ns, UPTO)):
        marks = orjson.loads(val).get("through")
        for author, seq in (marks or {}).items():
            if isinstance(seq, int) and seq > out.get(author, 0):
                out[author] = seq
    return out


def unreviewed_count(conn: sqlite3.Connection, ns: str, skip_client: str) -> int:
    """Changes of ``ns`` not made by ``skip_client`` that no verdict and no watermark covers
    (one pass over the namespace's op log, in SQLite)."""
    marks = through(conn, ns)
    row = conn.execute(
        "SELECT count(*) FROM (SELECT o.node, coalesce(o.bat, o.seq) AS last FROM ops o "
        "WHERE o.ns = ? AND o.key IS NOT NULL AND coalesce(o.client, '') != ? "
        "GROUP BY o.node, last) c "
        "WHERE NOT EXISTS (SELECT 1 FROM reviews r WHERE r.ns = ? "
        "AND r.subject = c.node || ':' || c.last) "
        "AND c.last > coalesce((SELECT value FROM json_each(?) WHERE key = c.node), 0)",
        (ns, skip_client, ns, orjson.dumps(marks).decode()),
    ).fetchone()
    return int(row[0])
