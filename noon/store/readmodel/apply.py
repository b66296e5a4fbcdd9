"""Folding ops into the read model, and taking them out again, inside one write transaction.

:mod:`noon.core.fold` decides, per element, which versions are heads and which one wins; this
module only loads an element's versions, asks it, and stores the answer. So the read model holds
exactly what a fresh in-memory fold of the same ops would: the state is a function of the op
set, whatever order ops arrive in and whichever process folds them.

Ops are identified by ``(node, seq)``: one already held with the same digest is a duplicate and
skipped, one with another digest is a fork (:class:`~noon.core.fold.ForkError`, nothing of the
transaction is kept). Removing ops (a shard compacted, a tombstone collected, a replica shard
replaced or gone) recomputes every element they touched from the versions that remain; an
element with none left disappears with everything derived from it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from noon.core.fold import Element, ForkError
from noon.core.ops import Op, OpId
from noon.store.readmodel import project
from noon.store.readmodel.rows import ROW, key_of, op_of, op_row, signed, skeleton

IN_CHUNK = 500
"""Parameters per ``IN (...)`` list (SQLite allows 32766; smaller lists plan faster)."""


def chunks(items: Iterable[Any], size: int = IN_CHUNK) -> Iterator[list[Any]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


class Transaction:
    """What one write transaction folds in (:meth:`add`) and takes out (:meth:`remove_ops`),
    settled by :meth:`finish`. The caller holds the write transaction open around it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.fresh: dict[str, list[Op]] = {}
        """Key text -> ops added by this transaction (all the versions, if the key is new)."""
        self.touched: set[str] = set()
        """Key texts that lost versions: their elements are recomputed from what is stored."""
        self.added = 0
        self.removed = 0
        self.newest = 0
        """The greatest stamp added: the local clock observes it."""

    # -- in --------------------------------------------------------------------------------

    def add(self, ops: Sequence[Op]) -> None:
        """Store ops not held yet. Raises ForkError when one differs from the op held under its
        identity."""
        new = self._unseen(ops)
        if not new:
            return
        rows = [op_row(op) for op in new]
        self.conn.executemany(f"INSERT INTO ops ({ROW}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
        self.added += len(new)
        self.newest = max(self.newest, max(op.hlc for op in new))
        highest: dict[str, int] = {}
        for op in new:
            if op.seq > highest.get(op.node, 0):
                highest[op.node] = op.seq
        self.conn.executemany(
            "INSERT INTO highwater (node, seq) VALUES (?, ?) "
            "ON CONFLICT (node) DO UPDATE SET seq = max(seq, excluded.seq)",
            highest.items(),
        )
        for op, row in zip(new, rows, strict=True):
            if row[5] is not None:
                self.fresh.setdefault(row[5], []).append(op)

    def check(self, ops: Sequence[Op]) -> None:
        """Raise ForkError if one of ``ops`` differs from the op held under its identity,
        storing nothing (ops found in another author's shard)."""
        self._unseen(ops)

    def _unseen(self, ops: Sequence[Op]) -> list[Op]:
        held: dict[OpId, int] = {}
        by_node: dict[str, list[int]] = {}
        for op in ops:
            by_node.setdefault(op.node, []).append(op.seq)
        for node, seqs in by_node.items():
            lo, hi = min(seqs), max(seqs)
            if hi - lo > 4 * len(seqs) + 1000:  # scattered seqs: look each one up
                for part in chunks(sorted(set(seqs))):
                    marks = ",".join("?" * len(part))
                    rows = self.conn.execute(
                        f"SELECT seq, digest FROM ops WHERE node = ? AND seq IN ({marks})",
                        (node, *part),
                    )
                    held.update(((node, s), d) for s, d in rows)
            else:
                rows = self.conn.execute(
                    "SELECT seq, digest FROM ops WHERE node = ? AND seq BETWEEN ? AND ?",
                    (node, lo, hi),
                )
                held.update(((node, s), d) for s, d in rows)
        new: list[Op] = []
        for op in ops:
            seen = held.get((op.node, op.seq))
            if seen is None:
                held[(op.node, op.seq)] = signed(op.digest)
                new.append(op)
            elif seen != signed(op.digest):
                raise ForkError(op.node, op.seq)
        return new

    # -- out -------------------------------------------------------------------------------

    def remove_ops(self, node: str, seqs: Iterable[int]) -> None:
        for part in chunks(seqs):
            marks = ",".join("?" * len(part))
            args = (node, *part)
            for (key,) in self.conn.execute(
                f"SELECT key FROM ops WHERE node = ? AND seq IN ({marks}) AND key IS NOT NULL",
                args,
            ):
                self.touched.add(key)
            gone = self.conn.execute(
                f"DELETE FROM ops WHERE node = ? AND seq IN ({marks})", args
            ).rowcount
            self.removed += gone

    def held_seqs(self, node: str) -> list[int]:
        return [s for (s,) in self.conn.execute("SELECT seq FROM ops WHERE node = ?", (node,))]

    # -- settle ----------------------------------------------------------------------------

    def finish(self) -> set[str]:
        """Recompute every element this transaction touched and what derives from it. Returns
        the key texts whose state may have changed."""
        keys = set(self.fresh) | self.touched
        if not keys:
            return keys
        stored = self._stored(self.fresh.keys() - self.touched)
        derived = project.Projection(self.conn)
        for kt in sorted(keys):
            if kt in self.touched or kt in stored:
                self._settle_stored(kt, derived)
            else:
                self._settle_new(kt, self.fresh[kt], derived)
        derived.finish()
        return keys

    def _stored(self, keys: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for part in chunks(keys):
            marks = ",".join("?" * len(part))
            found.update(
                k
                for (k,) in self.conn.execute(
                    f"SELECT key FROM elements WHERE key IN ({marks})", part
                )
            )
        return found

    def _settle_new(self, kt: str, versions: list[Op], derived: project.Projection) -> None:
        el = Element(versions[0])
        for op in versions[1:]:
            el.add(op)
        derived.element(kt, el.winner.el, el.winner, el.heads, fresh=True)

    def _settle_stored(self, kt: str, derived: project.Projection) -> None:
        key = key_of(kt)
        rows = self.conn.execute(
            "SELECT node, seq, hlc, tomb, prev FROM ops WHERE key = ?", (kt,)
        ).fetchall()
        if not rows:
            derived.gone(kt, key)
            return
        versions = [skeleton(n, s, h, key, t, p) for n, s, h, t, p in rows]
        el = Element(versions[0])
        for op in versions[1:]:
            el.add(op)
        heads = {i: self.full(i) for i in el.heads}
        derived.element(kt, key, heads[el.winner.id], heads, fresh=False)

    def full(self, op_id: OpId) -> Op:
        row = self.conn.execute(
            f"SELECT {ROW} FROM ops WHERE node = ? AND seq = ?", op_id
        ).fetchone()
        return op_of(row)
