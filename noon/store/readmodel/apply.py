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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from noon.core.fold import Element, ForkError
from noon.core.ops import Key, Op, OpId
from noon.store.readmodel import project
from noon.store.readmodel.documents import Dirty
from noon.store.readmodel.rows import (
    INSERT,
    KEY,
    ROW,
    key_of,
    key_text,
    op_of,
    op_row,
    signed,
    skeleton,
)

IN_CHUNK = 500
"""Parameters per ``IN (...)`` list (SQLite allows 32766; smaller lists plan faster)."""


def chunks(items: Iterable[Any], size: int = IN_CHUNK) -> Iterator[list[Any]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


class Transaction:
    """What one write transaction folds in (:meth:`add`) and takes out (:meth:`remove_ops`),
    settled by :meth:`finish`. The caller holds the write transaction open around it.

    Elements are numbered: ops and heads refer to their element by id (an index on a growing
    integer costs far less to fill than one on key texts)."""

    def __init__(self, conn: sqlite3.Connection, docs: Dirty) -> None:
        """``docs``: the search documents the fold's transactions left to its last one."""
        self.conn = conn
        self.docs = docs
        self.ids: dict[str, int] = {}
        """Key text -> element id, for every key this transaction met."""
        self.new: set[str] = set()
        """Keys that had no element before this transaction (ids allocated here)."""
        self.next_id = 0
        self.stored: bool | None = None
        """Whether ``elements`` held any row when this transaction first numbered keys (its
        rows are written at :meth:`finish`, so it stays so until then)."""
        self.fresh: dict[str, list[Op]] = {}
        """Key text -> ops added by this transaction (all the versions, if the key is new)."""
        self.touched: set[str] = set()
        """Key texts that lost versions: their elements are recomputed from what is stored."""
        self.added = 0
        self.removed = 0
        self.newest = 0
        """The greatest stamp added: the local clock observes it."""

    # -- in --------------------------------------------------------------------------------

    def add(self, ops: Sequence[Op], at: Mapping[OpId, int] | None = None) -> None:
        """Store ops not held yet, each line starting at byte ``at[op.id]`` of its author's
        shard. Raises ForkError when one differs from the op held under its identity."""
        new = self._unseen(ops)
        at = at or {}
        if at and len(new) < len(ops):
            self._moved(ops, new, at)
        if not new:
            return
        texts = self._texts(new)
        self._number(texts)
        ids, fresh = self.ids, self.fresh
        rows = []
        newest = self.newest
        highest: dict[str, int] = {}
        for op in new:
            kt = texts.get(op.el) if op.known else None
            rows.append(op_row(op, None if kt is None else ids[kt], at.get((op.node, op.seq))))
            if op.hlc > newest:
                newest = op.hlc
            if op.seq > highest.get(op.node, 0):
                highest[op.node] = op.seq
            if kt is not None:
                versions = fresh.get(kt)
                if versions is None:
                    fresh[kt] = [op]
                else:
                    versions.append(op)
        self.conn.executemany(INSERT, rows)
        self.added += len(new)
        self.newest = newest
        self.conn.executemany(
            "INSERT INTO highwater (node, seq) VALUES (?, ?) "
            "ON CONFLICT (node) DO UPDATE SET seq = max(seq, excluded.seq)",
            highest.items(),
        )

    @staticmethod
    def _texts(ops: Sequence[Op]) -> dict[Key, str]:
        """The key text of every element ``ops`` name (of a kind this version knows), each key
        encoded once however many versions of it the batch holds."""
        texts: dict[Key, str] = {}
        for op in ops:
            if op.known and op.el not in texts:
                texts[op.el] = key_text(op.el)
        return texts

    def _moved(self, ops: Sequence[Op], new: list[Op], at: Mapping[OpId, int]) -> None:
        """Where the lines of ops held already start now (a shard read again after a
        compaction moved them): their values are read from there."""
        fresh = {op.id for op in new}
        self.conn.executemany(
            "UPDATE ops SET at = ? WHERE node = ? AND seq = ? AND at IS NOT NULL",
            [(at[op.id], op.node, op.seq) for op in ops if op.id not in fresh and op.id in at],
        )

    def _number(self, texts: Mapping[Key, str]) -> None:
        """Give every key an element id: the one it has, or a new one. Into an empty read
        model (a rebuild, a fresh node's catch-up) every key is new: nothing to look up."""
        unknown = sorted({k for k in texts.values() if k not in self.ids})
        if not unknown:
            return
        if self.stored is None:
            self.next_id = int(self.conn.execute("SELECT max(id) FROM elements").fetchone()[0] or 0)
            self.stored = self.next_id > 0
        if self.stored:
            for part in chunks(unknown):
                marks = ",".join("?" * len(part))
                self.ids.update(
                    self.conn.execute(f"SELECT key, id FROM elements WHERE key IN ({marks})", part)
                )
        for k in unknown:
            if k not in self.ids:
                self.next_id += 1
                self.ids[k] = self.next_id
                self.new.add(k)

    def check(self, ops: Sequence[Op]) -> None:
        """Raise ForkError if one of ``ops`` differs from the op held under its identity,
        storing nothing (ops found in another author's shard)."""
        self._unseen(ops)

    def _unseen(self, ops: Sequence[Op]) -> list[Op]:
        if self._all_beyond(ops):
            return list(ops)
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

    def _all_beyond(self, ops: Sequence[Op]) -> bool:
        """The common case of a catch-up: one author's ops in increasing seq, all above every
        seq held of that author. Nothing to compare then."""
        if not ops:
            return True
        node = ops[0].node
        last = 0
        for op in ops:
            if op.node != node or op.seq <= last:
                return False
            last = op.seq
        row = self.conn.execute("SELECT max(seq) FROM ops WHERE node = ?", (node,)).fetchone()
        return ops[0].seq > int(row[0] or 0)

    # -- out -------------------------------------------------------------------------------

    def remove_ops(self, node: str, seqs: Iterable[int]) -> None:
        for part in chunks(seqs):
            marks = ",".join("?" * len(part))
            args = (node, *part)
            for key, eid in self.conn.execute(
                f"SELECT {KEY}, eid FROM ops WHERE node = ? AND seq IN ({marks}) "
                "AND eid IS NOT NULL",
                args,
            ):
                self.touched.add(key)
                self.ids[key] = eid
            gone = self.conn.execute(
                f"DELETE FROM ops WHERE node = ? AND seq IN ({marks})", args
            ).rowcount
            self.removed += gone

    def held_seqs(self, node: str) -> list[int]:
        return [s for (s,) in self.conn.execute("SELECT seq FROM ops WHERE node = ?", (node,))]

    # -- settle ----------------------------------------------------------------------------

    def finish(self) -> set[str]:
        """Recompute every element this transaction touched and what derives from it. Returns
        the key texts whose state may have changed. Elements held before are loaded
        :data:`IN_CHUNK` at a time: their versions in one query, their heads' full rows in
        another (a catch-up settles tens of thousands of them)."""
        keys = set(self.fresh) | self.touched
        if not keys:
            return keys
        derived = project.Projection(self.conn, self.docs)
        for part in chunks(sorted(keys)):
            stored = [kt for kt in part if kt not in self.new or kt in self.touched]
            loaded = self._load(stored)
            for kt in part:
                if kt in loaded:
                    self._settle_stored(kt, loaded[kt], derived)
                else:
                    self._settle_new(kt, self.fresh[kt], derived)
        derived.finish()
        return keys

    def _settle_new(self, kt: str, versions: list[Op], derived: project.Projection) -> None:
        first = versions[0]
        if len(versions) == 1:  # what Element folds one version to, without building one
            derived.element(self.ids[kt], kt, first.el, first, {first.id: first}, fresh=True)
            return
        el = Element(first)
        for op in versions[1:]:
            el.add(op)
        derived.element(self.ids[kt], kt, el.winner.el, el.winner, el.heads, fresh=True)

    def _load(self, texts: list[str]) -> dict[str, Element | None]:
        """The folded state of elements ``texts`` from every version stored, heads as full ops
        (None: no version is left). The versions this transaction added are the ops it holds:
        only the others' rows are decoded (a catch-up's later chunks edit what earlier ones
        folded, and the new version is most often the only head)."""
        if not texts:
            return {}
        by_id = {self.ids[kt]: kt for kt in texts}
        keys = {eid: key_of(kt) for eid, kt in by_id.items()}
        # Not those of an element that lost versions: an op taken out and added again in this
        # transaction (under this element or another) would have two ops under one identity.
        full: dict[OpId, Op] = {
            op.id: op for kt in texts if kt not in self.touched for op in self.fresh.get(kt, ())
        }
        versions: dict[int, list[Op]] = {}
        marks = ",".join("?" * len(by_id))
        for eid, n, s, h, t, p in self.conn.execute(
            f"SELECT eid, node, seq, hlc, tomb, prev FROM ops WHERE eid IN ({marks})", list(by_id)
        ):
            op = full.get((n, s))
            versions.setdefault(eid, []).append(
                skeleton(n, s, h, keys[eid], t, p) if op is None else op
            )
        out: dict[str, Element | None] = dict.fromkeys(texts)
        for eid, found in versions.items():
            el = Element(found[0])
            for op in found[1:]:
                el.add(op)
            out[by_id[eid]] = el
        heads = [i for el in out.values() if el is not None for i in el.heads if i not in full]
        for part in chunks(heads):
            pairs = ",".join("(?,?)" for _ in part)
            for row in self.conn.execute(
                f"SELECT {ROW}, eid FROM (VALUES {pairs}) AS wanted CROSS JOIN ops "
                "ON ops.node = wanted.column1 AND ops.seq = wanted.column2",
                [x for op_id in part for x in op_id],
            ):
                op = op_of(row[:-1], keys[row[-1]])
                full[op.id] = op
        for settled in out.values():
            if settled is not None:
                settled.heads = {i: full[i] for i in settled.heads}
        return out

    def _settle_stored(self, kt: str, el: Element | None, derived: project.Projection) -> None:
        eid = self.ids[kt]
        if el is None:
            derived.gone(eid, key_of(kt))
            return
        winner = el.heads[el.winner.id]
        derived.element(eid, kt, winner.el, winner, el.heads, fresh=kt in self.new)
