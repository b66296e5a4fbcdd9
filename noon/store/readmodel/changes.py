"""Changes as a person reviews them, read from the op log: one tool call (the ops of one author
sharing ``bat``) or one lone op; and the review state written by the web page.

A change's id is ``node:seq`` of its last op (its ``bat``), the same on every machine. Its ops
are the held ops of that author between the op before the batch and that seq: a batch's seqs
are consecutive, so the span is found by walking the primary key back from the id. It is listed
by its *stamp*, the greatest ``(hlc, node, seq)`` of its ops: a walk of a namespace's ops newest
first meets each change first at its newest op, so changes come out in order without grouping
the whole log.

A change is *reviewed* when a verdict names it (``review(ns, change id, reviewer)``) or when a
watermark covers it (``review(ns, "upto", reviewer)``: "approve all"; any reviewer's counts).
Only each machine's own decisions are read (:mod:`noon.core.review`: the ``reviews`` table holds
them), and a decision covers only what was stamped before it: a verdict the change it names,
when that change is older; a watermark an author's ops up to its seq that are older than it. A
``rolled_back`` verdict is believed only while no text the change wrote is still current. Only
ops the shards still hold are listed: a version compaction dropped is gone from its change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from noon.core import review
from noon.core.elements import BOOT, CONTENT, EDGE, KEYWORD, KG_KINDS
from noon.core.ops import MAX_BATCH, Key, Op
from noon.store.readmodel.rows import KEY, ROW, key_text, op_of
from noon.store.readmodel.state import load_op

UPTO = "upto"
"""The review subject whose value is a watermark: ``{"through": {author: seq}}``."""
Stamp = tuple[int, str, int]
_KNOWN = "eid IS NOT NULL"
"""Ops of a kind this version does not know are stored without an element and never listed."""


def subject(conn: sqlite3.Connection, op: Op) -> str | None:
    """The memory (node id) or ``kg:<entity>`` an op is about; None for review ops. A removed
    placement is about the memory its replaced version placed (``@edge:<parent>/<name>`` when
    that version is not held)."""
    key = op.el
    if key[0] == EDGE:
        if op.val is not None:
            return str(op.val.get("child"))
        placed = [p for p in (load_op(conn, i) for i in op.prev or ()) if p and p.val is not None]
        if placed:
            return str(min(placed, key=lambda o: o.order).val["child"])  # type: ignore[index]
        return f"@edge:{key[2]}/{key[3]}"
    return _by_key(key)


def _by_key(key: Key) -> str | None:
    """The subject of any op on ``key`` but a placement's."""
    kind = key[0]
    if kind in (CONTENT, BOOT):
        return key[2]
    if kind == KEYWORD:
        return key[3]
    if kind in KG_KINDS:
        return f"kg:{key[2]}"
    return None


@dataclass(frozen=True)
class Ref:
    """A change as a list needs it, read without any op's value."""

    id: str
    namespace: str
    author: str
    seq: int
    """The seq of its id: its last op's (a watermark covers the change up to there)."""
    low: int
    """Its ops are the author's held ops with ``low < seq <= self.seq``."""
    client: str
    """The name its writer was told by its client (information only)."""
    via: str
    """The edge that wrote it (``web``, ``cli``, ``import``, ``mcp``; empty when its op does not
    say: written before edges were recorded)."""
    stamp: Stamp
    oldest: Stamp
    """The least ``(hlc, node, seq)`` of its ops."""
    count: int
    """Its ops still held."""


def ref(conn: sqlite3.Connection, cid: str) -> Ref | None:
    """The change ``cid`` (``node:seq``), or None when none of its ops is held."""
    node, _, seq_text = cid.rpartition(":")
    if not (seq_text.isascii() and seq_text.isdigit()) or int(seq_text) >= 1 << 63:
        return None
    last = int(seq_text)
    row = conn.execute("SELECT bat FROM ops WHERE node = ? AND seq = ?", (node, last)).fetchone()
    if row is not None and row[0] is None:
        low = last - 1  # a lone op
    else:
        found = conn.execute(
            "SELECT seq FROM ops WHERE node = ? AND seq <= ? AND (bat IS NULL OR bat != ?) "
            "ORDER BY seq DESC LIMIT 1",
            (node, last, last),
        ).fetchone()
        low = found[0] if found is not None else -1
    span = f"FROM ops WHERE node = ? AND seq > ? AND seq <= ? AND {_KNOWN}"
    count, newest, oldest = conn.execute(
        f"SELECT count(*), max(hlc), min(hlc) {span}", (node, low, last)
    ).fetchone()
    if not count:
        return None
    seq, ns, client, via = conn.execute(
        f"SELECT seq, ns, client, via {span} AND hlc = ? ORDER BY seq DESC LIMIT 1",
        (node, low, last, newest),
    ).fetchone()
    (first,) = conn.execute(
        f"SELECT seq {span} AND hlc = ? ORDER BY seq LIMIT 1", (node, low, last, oldest)
    ).fetchone()
    return Ref(
        f"{node}:{last}",
        ns,
        node,
        last,
        low,
        client or "unknown",
        via or "",
        (newest, node, seq),
        (oldest, node, first),
        count,
    )


def _ops(
    conn: sqlite3.Connection, r: Ref, where: str = "", limit: int = -1, args: tuple[Any, ...] = ()
) -> list[Op]:
    rows = conn.execute(
        f"SELECT {ROW} FROM ops WHERE node = ? AND seq > ? AND seq <= ? AND {_KNOWN} {where} "
        "ORDER BY seq LIMIT ?",
        (r.author, r.low, r.seq, *args, limit),
    )
    return [op_of(row) for row in rows]


@dataclass(frozen=True)
class Head:
    """A change as a list shows it: its first ops, and what it is about."""

    ref: Ref
    first: list[Op]
    subject: str | None
    """What its first op that is about something is about (the page files it there)."""


def head(conn: sqlite3.Connection, r: Ref, first: int) -> Head:
    """``r`` with its ``first`` ops (in the order its author wrote them) and its subject; reads
    the values of those ops only."""
    about = _ops(conn, r, "AND (SELECT kind FROM elements WHERE id = eid) != 'review'", 1)
    what = subject(conn, about[0]) if about else None
    return Head(r, _ops(conn, r, limit=first), what)


@dataclass
class Change:
    ref: Ref
    ops: list[Op]
    """Its ops still held, in seq order (the order its author wrote them)."""

    @property
    def id(self) -> str:
        return self.ref.id


def load_ops(conn: sqlite3.Connection, r: Ref) -> list[Op]:
    """Every op the change ``r`` still holds, in seq order."""
    return _ops(conn, r)


def keys_of(conn: sqlite3.Connection, r: Ref) -> set[str]:
    """The key texts of the elements the change ``r`` wrote (no value is read)."""
    return {
        kt
        for (kt,) in conn.execute(
            f"SELECT {KEY} FROM ops WHERE node = ? AND seq > ? AND seq <= ? AND {_KNOWN}",
            (r.author, r.low, r.seq),
        )
    }


def ops_on(conn: sqlite3.Connection, r: Ref, keys: Iterable[str]) -> list[Op]:
    """The ops of the change ``r`` on the elements ``keys`` (key texts), in seq order: through
    the element index, so a page of a large change costs what the page holds."""
    out: list[Op] = []
    for part in _chunks(sorted(set(keys))):
        marks = ",".join("?" * len(part))
        out += [
            op_of(row)
            for row in conn.execute(
                f"SELECT {ROW} FROM ops WHERE eid IN (SELECT id FROM elements WHERE key IN "
                f"({marks})) AND node = ? AND seq > ? AND seq <= ?",
                (*part, r.author, r.low, r.seq),
            )
        ]
    return sorted(out, key=lambda op: op.seq)


def ops_under(conn: sqlite3.Connection, r: Ref, prefix: str) -> list[Op]:
    """The ops of the change ``r`` whose key text starts with ``prefix`` (the placements under
    one memory): the change's span is scanned by key, only those ops' values are read."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    under = "AND eid IN (SELECT id FROM elements WHERE key >= ? AND key < ?)"
    return _ops(conn, r, under, args=(prefix, end))


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def load(conn: sqlite3.Connection, cid: str) -> Change | None:
    """The change ``cid`` with every op it still holds, or None when it holds none."""
    r = ref(conn, cid)
    return None if r is None else Change(r, load_ops(conn, r))


def _marks(conn: sqlite3.Connection, ns: str) -> tuple[str, list[Any]]:
    """An SQL expression of ``node``: its watermark (0 when it has none)."""
    marks = through(conn, ns)
    if not marks:
        return "0", []
    whens = " ".join("WHEN ? THEN ?" for _ in marks)
    return f"(CASE node {whens} ELSE 0 END)", [x for pair in marks.items() for x in pair]


_STANDS = (
    "EXISTS (SELECT 1 FROM ops c JOIN elements e ON e.id = c.eid WHERE c.node = ops.node "
    "AND c.seq BETWEEN coalesce(ops.bat - ?, ops.seq) AND coalesce(ops.bat, ops.seq) "
    "AND coalesce(c.bat, c.seq) = coalesce(ops.bat, ops.seq) "
    "AND e.kind != 'review' AND ((e.w_node = c.node AND e.w_seq = c.seq) OR EXISTS "
    "(SELECT 1 FROM heads h WHERE h.eid = c.eid AND h.node = c.node AND h.seq = c.seq)))"
).replace("?", str(MAX_BATCH))
"""A text the change of ``ops`` wrote is still current (a batch's ops lie within
:data:`~noon.core.ops.MAX_BATCH` seqs below its end; evaluated only for a rollback verdict)."""
_VERDICT = (
    "EXISTS (SELECT 1 FROM reviews r WHERE r.ns = ops.ns "
    "AND r.subject = ops.node || ':' || coalesce(ops.bat, ops.seq) AND r.w_hlc > coalesce("
    "(SELECT l.hlc FROM ops l WHERE l.node = ops.node AND l.seq = coalesce(ops.bat, ops.seq)), "
    "ops.hlc) AND (json_extract(r.val, '$.verdict') = 'approved' OR "
    f"(json_extract(r.val, '$.verdict') = 'rolled_back' AND NOT {_STANDS})))"
)
"""A decision that counts names the change of ``ops``: stamped after it, and a rollback only
while the change's text no longer stands (:func:`stands`)."""


def newest(
    conn: sqlite3.Connection,
    ns: str,
    before: Stamp | None = None,
    *,
    reviewed: bool | None = None,
    skip_via: str = "",
    since: int | None = None,
) -> Iterator[Ref]:
    """Changes of ``ns``, newest first, each older than ``before`` when given. With
    ``reviewed`` (True or False), only the changes not written through the edge ``skip_via``
    that are (or are not) reviewed. ``since``: no wanted change has an op older than this
    ``hlc`` (the walk stops there; see :func:`pending`).

    Each step asks for the newest op below the last one met. When nothing but the ops of the
    change just met lies between its newest and its oldest op (one tool call is stamped at one
    moment), the walk goes on below its oldest; otherwise the next step leaves its ops out.
    Either way a batch of a thousand ops is passed over inside SQLite, not row by row here.
    """
    # The terms on the index's columns first: SQLite tests them in this order, so the ops of the
    # change just listed are stepped over before any other column is read.
    where = f"{_KNOWN}"
    fixed: list[Any] = []
    if since is not None:
        where = f"hlc >= ? AND {where}"
        fixed.append(since)
    if reviewed is not None:
        mark, mark_args = _marks(conn, ns)
        covered = f"(coalesce(bat, seq) <= {mark} OR {_VERDICT})"
        where += f" AND coalesce(via, '') != ? AND {'' if reviewed else 'NOT '}{covered}"
        fixed += [skip_via, *mark_args]
    step = (
        "SELECT node, seq, bat, hlc FROM ops WHERE ns = ? AND hlc <= ? "
        "AND (hlc < ? OR node < ? OR (node = ? AND seq < ?)) "
        f"AND NOT (node = ? AND seq > ? AND seq <= ?) AND {where} "
        "ORDER BY hlc DESC, node DESC, seq DESC LIMIT 1"
    )
    at = before or ((1 << 63) - 1, "", 0)
    skip: tuple[str, int, int] = ("", 0, 0)
    listed: dict[str, Ref | None] = {}
    while True:
        hlc, node, seq = at
        row = conn.execute(step, (ns, hlc, hlc, node, node, seq, *skip, *fixed)).fetchone()
        if row is None:
            return
        node, seq, bat, hlc = row
        at = (hlc, node, seq)
        cid = f"{node}:{bat or seq}"
        met = cid in listed
        r = listed[cid] if met else ref(conn, cid)
        listed[cid] = r
        skip = (r.author, r.low, r.seq) if r is not None else (node, seq - 1, seq)
        if r is not None and r.oldest < at and _alone(conn, ns, r):
            at, skip = r.oldest, ("", 0, 0)
        if not met and r is not None and (before is None or r.stamp < before):
            yield r


def _alone(conn: sqlite3.Connection, ns: str, r: Ref) -> bool:
    """Whether no op of ``ns`` but ``r``'s own is stamped between its oldest and newest."""
    found = conn.execute(
        "SELECT 1 FROM ops WHERE ns = ? AND hlc >= ? AND hlc <= ? "
        "AND NOT (node = ? AND seq > ? AND seq <= ?) LIMIT 1",
        (ns, r.oldest[0], r.stamp[0], r.author, r.low, r.seq),
    ).fetchone()
    return found is None


def about(conn: sqlite3.Connection, keys: Iterable[Key], what: str) -> list[Ref]:
    """The changes holding an op on one of ``keys`` whose :func:`subject` is ``what``, newest
    first (pass the keys of :func:`~noon.store.readmodel.oplog.memory_keys` or
    ``entity_keys``: every op about a memory or an entity is on one of them)."""
    ids: set[str] = set()
    for key in keys:
        for node, seq, bat, child in conn.execute(
            "SELECT node, seq, bat, child FROM ops "
            "WHERE eid = (SELECT id FROM elements WHERE key = ?)",
            (key_text(key),),
        ):
            cid = f"{node}:{bat or seq}"
            if cid in ids:
                continue
            if key[0] == EDGE and child is None:  # a removed placement: what did it place?
                op = load_op(conn, (node, seq))
                about_it = op is not None and subject(conn, op) == what
            else:
                about_it = (child if key[0] == EDGE else _by_key(key)) == what
            if about_it:
                ids.add(cid)
    found = [r for r in (ref(conn, cid) for cid in ids) if r is not None]
    return sorted(found, key=lambda r: r.stamp, reverse=True)


@dataclass(frozen=True)
class Verdict:
    reviewer: str
    value: dict[str, Any]
    order: Stamp
    """The review op's ``(hlc, node, seq)``: the latest verdict of a change is the one shown."""
    batch: str
    """The change that wrote it (a rollback's own id, for a ``rolled_back`` verdict)."""


def verdicts(conn: sqlite3.Connection, ns: str, ids: Iterable[str]) -> dict[str, list[Verdict]]:
    """The live decisions on each of the changes ``ids``, by change id (whether each counts:
    :func:`counts`)."""
    out: dict[str, list[Verdict]] = {}
    for cid in set(ids):
        for reviewer, val, node, seq, hlc, bat in conn.execute(
            "SELECT r.reviewer, r.val, r.w_node, r.w_seq, r.w_hlc, o.bat FROM reviews r "
            "LEFT JOIN ops o ON o.node = r.w_node AND o.seq = r.w_seq "
            "WHERE r.ns = ? AND r.subject = ?",
            (ns, cid),
        ):
            order = (hlc, node, seq)
            out.setdefault(cid, []).append(
                Verdict(reviewer, orjson.loads(val), order, f"{node}:{bat or seq}")
            )
    return out


def stands(conn: sqlite3.Connection, r: Ref) -> bool:
    """Whether a text the change ``r`` wrote (or a deletion) is still current: a head of its
    memory. Stops at the first one found."""
    found = conn.execute(
        "SELECT 1 FROM ops c JOIN elements e ON e.id = c.eid "
        "WHERE c.node = ? AND c.seq > ? AND c.seq <= ? AND e.kind != 'review' "
        "AND ((e.w_node = c.node AND e.w_seq = c.seq) OR EXISTS "
        "(SELECT 1 FROM heads h WHERE h.eid = c.eid AND h.node = c.node AND h.seq = c.seq)) "
        "LIMIT 1",
        (r.author, r.low, r.seq),
    ).fetchone()
    return found is not None


def counts(conn: sqlite3.Connection, r: Ref, v: Verdict) -> bool:
    """Whether the decision ``v`` on ``r`` counts: a known verdict stamped after every op of
    the change (no machine approves what it had not seen), and ``rolled_back`` only while none
    of the change's text stands (PROTOCOL.md §1.5)."""
    verdict = review.verdict_of_value(v.value)
    if verdict is None or v.order[0] <= r.stamp[0]:
        return False
    return verdict != "rolled_back" or not stands(conn, r)


def through(conn: sqlite3.Connection, ns: str) -> dict[str, int]:
    """Per author, the seq up to which every change is reviewed: the greatest any reviewing
    machine's watermark covers. A watermark ``{author: seq}`` covers that author's ops up to
    ``seq`` stamped before the watermark itself (its seqs grow with its stamps), so a mark
    naming seqs not written yet covers nothing written after it. Only authors this machine ever
    held count (a watermark naming others has nothing to cover here), so what a list costs is
    bounded by them."""
    out: dict[str, int] = {}
    for stamp, author, seq in conn.execute(
        "SELECT r.w_hlc, j.key, j.value FROM reviews r, json_each(r.val, '$.through') j "
        "WHERE r.ns = ? AND r.subject = ? AND j.type = 'integer' AND j.value > 0 "
        "AND j.key IN (SELECT node FROM highwater)",
        (ns, UPTO),
    ).fetchall():
        row = conn.execute(
            "SELECT seq FROM ops WHERE node = ? AND seq <= ? AND hlc < ? ORDER BY seq DESC LIMIT 1",
            (author, seq, stamp),
        ).fetchone()
        if row is not None and row[0] > out.get(author, 0):
            out[author] = int(row[0])
    return out


@dataclass(frozen=True)
class Pending:
    count: int
    """Changes of the namespace waiting for review."""
    since: int | None
    """No op of a waiting change is older than this ``hlc`` (None: nothing waits)."""


_SKIP_SCAN = f"""
WITH RECURSIVE walk(seq) AS (
    SELECT CASE WHEN (SELECT coalesce(bat, seq) FROM ops WHERE node = :node AND seq = :mark)
        > :mark THEN :mark ELSE (SELECT min(seq) FROM ops WHERE node = :node AND seq > :mark) END
    UNION ALL
    SELECT (SELECT min(n.seq) FROM ops n WHERE n.node = :node AND n.seq > coalesce(o.bat, o.seq))
    FROM walk JOIN ops o ON o.node = :node AND o.seq = walk.seq
)
SELECT count(*), min(ops.hlc) FROM walk JOIN ops ON ops.node = :node AND ops.seq = walk.seq
WHERE ops.ns = :ns AND ops.{_KNOWN} AND coalesce(ops.via, '') != :skip AND NOT {_VERDICT}
"""


def pending(conn: sqlite3.Connection, ns: str, skip_via: str) -> Pending:
    """How many changes of ``ns`` not written through ``skip_via`` no verdict and no watermark
    covers. Per author, a skip-scan from its watermark that visits each change once (one index
    seek each), never each op: after "approve all" it costs what arrived since. A watermark can
    end inside a batch (its later ops stamped after the mark, or compacted away): the batch then
    waits, and the scan starts at the watermark's own op (a batch's seqs are consecutive)."""
    marks = through(conn, ns)
    count, since = 0, None
    for (node,) in conn.execute("SELECT node FROM highwater").fetchall():
        args = {"node": node, "mark": marks.get(node, 0), "ns": ns, "skip": skip_via}
        n, oldest = conn.execute(_SKIP_SCAN, args).fetchone()
        count += n
        if oldest is not None and (since is None or oldest < since):
            since = oldest
    return Pending(count, since)
