"""Reading folded elements back: the read model seen through the surface of an in-memory fold.

:class:`StoredElement` answers like :class:`noon.core.fold.Element` (``winner``, ``heads``,
``versions``, ``deleted``, ``conflicted``), loading only what is asked: the winner and heads
at once, the versions (history) when first read. :class:`FoldView` answers like
the test kit's in-memory fold for what callers outside the fold use: ``elements`` as a mapping,
``holds``, ``max_seq``, ``frontier``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

import orjson

from noon.core.fold import Folded
from noon.core.ops import Key, Op, OpId
from noon.store.readmodel.rows import ROW, key_of, key_text, op_of


class Database(Protocol):
    """Whatever holds the read model's connection (:class:`~noon.store.readmodel.model.
    ReadModel`): readers ask it each time, since a damaged file is replaced by a new one."""

    @property
    def conn(self) -> sqlite3.Connection: ...


class StoredElement(Folded):
    __slots__ = ("_conn", "_versions", "eid", "heads", "key", "winner")

    def __init__(
        self, conn: sqlite3.Connection, eid: int, key: Key, winner: Op, heads: dict[OpId, Op]
    ):
        self._conn = conn
        self.eid = eid
        self.key = key
        self.winner = winner
        self.heads = heads
        self._versions: list[Op] | None = None

    @property
    def versions(self) -> list[Op]:
        """Every version held, oldest first."""
        if self._versions is None:
            self._versions = [
                op_of(row, self.key)
                for row in self._conn.execute(
                    f"SELECT {ROW} FROM ops WHERE eid = ? ORDER BY hlc, node, seq",
                    (self.eid,),
                )
            ]
        return self._versions


def load_op(conn: sqlite3.Connection, op_id: OpId) -> Op | None:
    row = conn.execute(f"SELECT {ROW} FROM ops WHERE node = ? AND seq = ?", op_id).fetchone()
    return None if row is None else op_of(row)


def load_element(conn: sqlite3.Connection, key: Key) -> StoredElement | None:
    kt = key_text(key)
    row = conn.execute(
        "SELECT id, w_node, w_seq, nheads FROM elements WHERE key = ?", (kt,)
    ).fetchone()
    if row is None:
        return None
    eid, w_node, w_seq, nheads = row
    winner = load_op(conn, (w_node, w_seq))
    if winner is None:
        return None
    heads = {winner.id: winner}
    if nheads > 1:
        for node, seq in conn.execute("SELECT node, seq FROM heads WHERE eid = ?", (eid,)):
            head = load_op(conn, (node, seq))
            if head is not None:
                heads[head.id] = head
    return StoredElement(conn, eid, key, winner, heads)


IN_LIST = 500
"""Keys per ``IN (...)`` list: below SQLite's bound on a statement's variables."""


def head_ids(conn: sqlite3.Connection, keys: Sequence[Key]) -> dict[Key, tuple[OpId, ...]]:
    """The head ids (sorted) of each element of ``keys`` held, as :func:`load_element` would
    find them, in one query per :data:`IN_LIST` keys: a writer names them as ``prev`` for every
    draft of a batch, and an import's batch holds thousands."""
    by_text = {key_text(k): k for k in keys}
    texts = list(by_text)
    found: dict[Key, tuple[OpId, ...]] = {}
    for i in range(0, len(texts), IN_LIST):
        part = texts[i : i + IN_LIST]
        rows = conn.execute(
            "SELECT e.key, e.id, e.w_node, e.w_seq, e.nheads FROM elements e "
            "JOIN ops o ON o.node = e.w_node AND o.seq = e.w_seq "
            f"WHERE e.key IN ({','.join('?' * len(part))})",
            part,
        ).fetchall()
        for kt, eid, w_node, w_seq, nheads in rows:
            heads = {(w_node, w_seq)}
            if nheads > 1:
                heads.update(
                    conn.execute(
                        "SELECT h.node, h.seq FROM heads h "
                        "JOIN ops o ON o.node = h.node AND o.seq = h.seq WHERE h.eid = ?",
                        (eid,),
                    ).fetchall()
                )
            found[by_text[kt]] = tuple(sorted(heads))
    return found


class Elements(Mapping[Key, StoredElement]):
    """Every element, by key, loaded on access."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._db.conn

    def __getitem__(self, key: Key) -> StoredElement:
        el = load_element(self._conn, key)
        if el is None:
            raise KeyError(key)
        return el

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple):
            return False
        row = self._conn.execute(
            "SELECT 1 FROM elements WHERE key = ?", (key_text(key),)
        ).fetchone()
        return row is not None

    def __iter__(self) -> Iterator[Key]:
        for (kt,) in self._conn.execute("SELECT key FROM elements ORDER BY key").fetchall():
            yield key_of(kt)

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM elements").fetchone()[0])


class FoldView:
    """The folded state of the directory, read from the read model."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.elements = Elements(db)

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._db.conn

    def holds(self, node: str, seq: int) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM ops WHERE node = ? AND seq = ?", (node, seq)
        ).fetchone()
        return row is not None

    def max_seq(self, node: str) -> int:
        """The highest seq of ``node`` held now."""
        row = self._conn.execute("SELECT max(seq) FROM ops WHERE node = ?", (node,)).fetchone()
        return int(row[0] or 0)

    def highwater(self, node: str) -> int:
        """The highest seq of ``node`` ever folded here (a shard that shrank does not lower
        it)."""
        row = self._conn.execute("SELECT seq FROM highwater WHERE node = ?", (node,)).fetchone()
        return int(row[0]) if row else 0

    def names_any_of(self, node: str) -> bool:
        """Whether an op held names (in ``prev``) an op of ``node``: whether anything of its
        shard is superseded, and so whether a compaction could drop any of it. One pass over
        the ops, no decoding (``prev`` is stored as ``[["node",seq],...]``)."""
        needle = f"[{orjson.dumps(node).decode()},"
        row = self._conn.execute(
            "SELECT 1 FROM ops WHERE prev IS NOT NULL AND instr(prev, ?) > 0 LIMIT 1", (needle,)
        ).fetchone()
        return row is not None

    def frontier(self) -> dict[str, int]:
        """Highest seq held per author."""
        nodes = [n for (n,) in self._conn.execute("SELECT node FROM highwater ORDER BY node")]
        out = {}
        for node in nodes:
            seq = self.max_seq(node)
            if seq:
                out[node] = seq
        return out

    @property
    def applied(self) -> int:
        """Ops held (known or not)."""
        return int(self._conn.execute("SELECT count(*) FROM ops").fetchone()[0])
