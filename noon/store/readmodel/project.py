"""What the read model derives from each element's folded state: the rows views and tools query.

One call per element a transaction settled (:meth:`Projection.element`, or :meth:`Projection.gone`
when no version of it is left). Rows are buffered and written in bulk at :meth:`finish`; the
memories and entities whose search documents may differ (text, placement, URIs: a move changes
the URIs of a whole subtree, keywords) are marked for the fold's last transaction to rebuild
(:class:`.documents.Dirty`).

- ``content(ns, node)`` -> ``memories``: the text shown (the winner's, or for a deleted node its
  last live version's) and the winner's identity and stamp.
- ``edge(ns, parent, name)`` -> ``placements``: what :func:`noon.graph.reader.placements_of`
  yields (collisions of concurrent placements included).
- ``keyword(ns, keyword, node)`` -> ``keywords`` while live, and the namespace's glossary version.
- ``boot(ns, node)`` -> ``boot`` while live.
- ``entity`` / ``obs`` / ``rel`` -> ``entities``, ``observations``, ``relations`` while live.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import orjson

from noon.core import review
from noon.core.elements import BOOT, CONTENT, EDGE, ENTITY, KEYWORD, OBS, REL, REVIEW
from noon.core.ops import Key, Op, OpId
from noon.graph.reader import placements_of
from noon.store.readmodel import documents
from noon.store.readmodel.rows import ROW, op_of

_UPSERT_MEMORY = (
    "INSERT INTO memories (ns, node, deleted, text, w_node, w_seq, w_hlc) VALUES (?,?,?,?,?,?,?) "
    "ON CONFLICT (ns, node) DO UPDATE SET deleted = excluded.deleted, text = excluded.text, "
    "w_node = excluded.w_node, w_seq = excluded.w_seq, w_hlc = excluded.w_hlc"
)
_UPSERT_ENTITY = (
    "INSERT INTO entities (ns, name, type, after, w_hlc, w_node, w_seq) VALUES (?,?,?,?,?,?,?) "
    "ON CONFLICT (ns, name) DO UPDATE SET type = excluded.type, after = excluded.after, "
    "w_hlc = excluded.w_hlc, w_node = excluded.w_node, w_seq = excluded.w_seq"
)


def _insert(
    conn: sqlite3.Connection,
    table: str,
    new: list[tuple[Any, ...]],
    held: list[tuple[Any, ...]],
) -> None:
    """Write the rows of elements that had none (``new``: a plain insert) and of elements held
    before (``held``: over the row they had)."""
    for verb, rows in (("INSERT", new), ("INSERT OR REPLACE", held)):
        if rows:
            marks = ",".join("?" * len(rows[0]))
            conn.executemany(f"{verb} INTO {table} VALUES ({marks})", rows)


def _primary(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The leading key columns of a ``memories``/``entities`` (ns, name) or ``observations``/
    ``relations`` (ns, entity, obs|dst, slot|rtype...) row: enough to order the inserts."""
    return row[:4]


class Projection:
    """Derived rows of one transaction, written at :meth:`finish`."""

    def __init__(self, conn: sqlite3.Connection, docs: documents.Dirty) -> None:
        """``docs``: where the search documents to rebuild are marked (the fold's last
        transaction writes them)."""
        self.conn = conn
        self.elements: list[tuple[Any, ...]] = []
        """The state of elements held before (winner, deleted, heads; their id last), written
        into their row: an ``UPDATE`` leaves the index on the key text alone, where replacing
        the row took its entry out and put it back (45k held elements of a 1M-op read model:
        0.31 CPU s replaced, 0.19-0.20 s updated)."""
        self.new_elements: list[tuple[Any, ...]] = []
        """Rows of elements that had none: a plain insert, which need not look for a row to
        replace first (a catch-up or a rebuild writes nearly all of them this way). The same
        holds for the rows of observations and relations, keyed by their element's key."""
        self.heads: list[tuple[int, str, int]] = []
        self.unheaded: list[tuple[int]] = []
        """Elements held before whose ``heads`` rows are replaced."""
        self.memories: list[tuple[Any, ...]] = []
        self.placements: list[tuple[Any, ...]] = []
        self.keywords: list[tuple[str, str, str]] = []
        self.boot: list[tuple[str, str]] = []
        self.entities: list[tuple[Any, ...]] = []
        self.observations: list[tuple[Any, ...]] = []
        self.new_observations: list[tuple[Any, ...]] = []
        self.relations: list[tuple[Any, ...]] = []
        self.new_relations: list[tuple[Any, ...]] = []
        self.reviews: list[tuple[Any, ...]] = []
        self.docs = docs
        self.rewritten: list[tuple[str, str]] = []
        """(namespace, node) of memories rows that exist and are written again: their search
        documents are taken out before the text they indexed changes."""
        self.glossaries: set[str] = set()

    # -- one element -----------------------------------------------------------------------

    def element(
        self,
        eid: int,
        kt: str,
        key: Key,
        winner: Op,
        heads: Mapping[OpId, Op],
        *,
        fresh: bool,
    ) -> None:
        """Store the element's state and what derives from it. ``fresh``: it had no row yet."""
        kind, ns = key[0], key[1]
        deleted = winner.val is None
        if fresh:
            self.new_elements.append(
                (eid, kt, kind, ns, winner.node, winner.seq, winner.hlc, int(deleted), len(heads))
            )
        else:
            self.elements.append(
                (winner.node, winner.seq, winner.hlc, int(deleted), len(heads), eid)
            )
            self.unheaded.append((eid,))
        if len(heads) > 1:
            self.heads.extend((eid, n, s) for n, s in heads)
        if kind == CONTENT:
            self._content(eid, key, winner)
            if not fresh:
                self.rewritten.append((ns, key[2]))
        elif kind == EDGE:
            self._edge(key, winner, heads, fresh=fresh)
        elif kind == KEYWORD:
            self._keyword(key, deleted)
        elif kind == BOOT:
            self._boot(key, deleted)
        elif kind == ENTITY:
            self._entity(key, winner)
            if fresh:
                self.docs.new_entities[ns].add(key[2])
        elif kind == OBS:
            self._obs(key, winner, fresh=fresh)
        elif kind == REL:
            self._rel(key, winner, fresh=fresh)
        elif kind == REVIEW:
            self._review(eid, key)

    def gone(self, eid: int, key: Key) -> None:
        """No version of the element is left (collected, or its shard is gone)."""
        self.conn.execute("DELETE FROM elements WHERE id = ?", (eid,))
        self.conn.execute("DELETE FROM heads WHERE eid = ?", (eid,))
        kind, ns = key[0], key[1]
        if kind == CONTENT:
            row = self.conn.execute(
                "SELECT id FROM memories WHERE ns = ? AND node = ?", (ns, key[2])
            ).fetchone()
            if row is not None:
                documents.unindex(self.conn, row)
                self.conn.execute("DELETE FROM memories WHERE id = ?", row)
        elif kind == EDGE:
            self._unplace(key)
        elif kind == KEYWORD:
            self._keyword(key, True)
        elif kind == BOOT:
            self._boot(key, True)
        elif kind == ENTITY:
            self._entity(key, None)
        elif kind == OBS:
            self._obs(key, None)
        elif kind == REL:
            self._rel(key, None)
        elif kind == REVIEW:
            self.conn.execute(
                "DELETE FROM reviews WHERE ns = ? AND subject = ? AND reviewer = ?", key[1:4]
            )

    # -- the URI graph ---------------------------------------------------------------------

    def _content(self, eid: int, key: Key, winner: Op) -> None:
        ns, node = key[1], key[2]
        if winner.val is not None:
            text = str(winner.val["text"])
        else:
            row = self.conn.execute(
                f"SELECT {ROW} FROM ops WHERE eid = ? AND tomb = 0 "
                "ORDER BY hlc DESC, node DESC, seq DESC LIMIT 1",
                (eid,),
            ).fetchone()
            text = str(op_of(row, key).val["text"]) if row is not None else ""  # type: ignore[index]
        self.memories.append(
            (ns, node, int(winner.val is None), text, winner.node, winner.seq, winner.hlc)
        )
        self.docs.memories[ns].add(node)

    def _unplace(self, key: Key) -> None:
        _, ns, parent, name = key
        # The index by key, named: left to itself SQLite searches the primary key by
        # (ns, parent) alone, every placement under a busy parent (a fold of 200k ops spent
        # two thirds of its time here, all 50k memories sitting under one parent).
        for (child,) in self.conn.execute(
            "SELECT child FROM placements INDEXED BY placements_by_key "
            "WHERE ns = ? AND parent = ? AND key_name = ?",
            (ns, parent, name),
        ).fetchall():
            self.docs.moved[ns].add(child)
        self.conn.execute(
            "DELETE FROM placements WHERE ns = ? AND parent = ? AND key_name = ?",
            (ns, parent, name),
        )

    def _edge(self, key: Key, winner: Op, heads: Mapping[OpId, Op], *, fresh: bool) -> None:
        _, ns, parent, name = key
        if not fresh:
            self._unplace(key)
        for pl in placements_of(winner, heads, parent, name):
            self.placements.append(
                (ns, parent, pl.name, name, pl.child, pl.priority, pl.disclosure)
            )
            self.docs.moved[ns].add(pl.child)

    def _keyword(self, key: Key, deleted: bool) -> None:
        _, ns, keyword, node = key
        if deleted:
            self.conn.execute(
                "DELETE FROM keywords WHERE ns = ? AND keyword = ? AND node = ?",
                (ns, keyword, node),
            )
        else:
            self.keywords.append((ns, keyword, node))
        self.glossaries.add(ns)
        self.docs.memories[ns].add(node)

    def _boot(self, key: Key, deleted: bool) -> None:
        _, ns, node = key
        if deleted:
            self.conn.execute("DELETE FROM boot WHERE ns = ? AND node = ?", (ns, node))
        else:
            self.boot.append((ns, node))

    # -- the knowledge graph ---------------------------------------------------------------

    def _entity(self, key: Key, winner: Op | None) -> None:
        _, ns, name = key
        self.docs.entities[ns].add(name)
        if winner is None or winner.val is None:
            row = self.conn.execute(
                "SELECT id FROM entities WHERE ns = ? AND name = ?", (ns, name)
            ).fetchone()
            if row is not None:
                self.conn.execute("DELETE FROM entities WHERE id = ?", row)
                self.conn.execute("DELETE FROM entity_fts WHERE rowid = ?", row)
            return
        after = winner.val.get("after", 0)
        self.entities.append(
            (
                ns,
                name,
                winner.val["type"],
                after if isinstance(after, int) else 0,
                winner.hlc,
                winner.node,
                winner.seq,
            )
        )

    def _obs(self, key: Key, winner: Op | None, *, fresh: bool = False) -> None:
        _, ns, entity, obs, slot = key
        self.docs.entities[ns].add(entity)
        if winner is None or winner.val is None:
            self.conn.execute(
                "DELETE FROM observations WHERE ns = ? AND entity = ? AND obs = ? AND slot = ?",
                (ns, entity, obs, slot),
            )
            return
        text = winner.val.get("text")  # a long one's (OBS_TEXT)
        (self.new_observations if fresh else self.observations).append(
            (
                ns,
                entity,
                obs,
                slot,
                text if isinstance(text, str) and text != obs else None,
                winner.hlc,
                winner.node,
                winner.seq,
            )
        )

    def _rel(self, key: Key, winner: Op | None, *, fresh: bool = False) -> None:
        _, ns, src, dst, rtype, slot = key
        if winner is None or winner.val is None:
            self.conn.execute(
                "DELETE FROM relations WHERE ns = ? AND src = ? AND dst = ? AND rtype = ? "
                "AND slot = ?",
                (ns, src, dst, rtype, slot),
            )
            return
        row = (ns, src, dst, rtype, slot, winner.hlc, winner.node, winner.seq)
        (self.new_relations if fresh else self.relations).append(row)

    def _review(self, eid: int, key: Key) -> None:
        """The decision of the machine the key names, from the versions it wrote itself
        (:func:`noon.core.review.decision`), not the element's winner: another machine's
        version never speaks for it."""
        _, ns, subject, reviewer = key
        rows = self.conn.execute(f"SELECT {ROW} FROM ops WHERE eid = ?", (eid,))
        found = review.decision((op_of(row, key) for row in rows), reviewer)
        if found is None or found.val is None:
            self.conn.execute(
                "DELETE FROM reviews WHERE ns = ? AND subject = ? AND reviewer = ?",
                (ns, subject, reviewer),
            )
            return
        self.reviews.append(
            (
                ns,
                subject,
                reviewer,
                orjson.dumps(found.val).decode(),
                found.node,
                found.seq,
                found.hlc,
            )
        )

    # -- write -----------------------------------------------------------------------------

    def _unindex_rewritten(self) -> None:
        by_ns: dict[str, list[str]] = {}
        for ns, node in self.rewritten:
            by_ns.setdefault(ns, []).append(node)
        for ns, nodes in sorted(by_ns.items()):
            for start in range(0, len(nodes), documents.BULK):
                part = nodes[start : start + documents.BULK]
                marks = ",".join("?" * len(part))
                ids = self.conn.execute(
                    f"SELECT id FROM memories WHERE ns = ? AND node IN ({marks})", (ns, *part)
                ).fetchall()
                documents.unindex(self.conn, (i for (i,) in ids))

    def finish(self) -> None:
        c = self.conn
        # Rows in key order: a B-tree filled in order touches each page once.
        self.new_elements.sort(key=lambda row: row[1])  # by key: the id of a new one only grows
        self.elements.sort(key=lambda row: row[-1])
        for rows in (self.heads, self.placements, self.keywords, self.boot):
            rows.sort()
        for rows in (
            self.memories,
            self.entities,
            self.observations,
            self.new_observations,
            self.relations,
            self.new_relations,
        ):
            rows.sort(key=_primary)
        c.executemany("INSERT INTO elements VALUES (?,?,?,?,?,?,?,?,?)", self.new_elements)
        c.executemany(
            "UPDATE elements SET w_node = ?, w_seq = ?, w_hlc = ?, deleted = ?, nheads = ? "
            "WHERE id = ?",
            self.elements,
        )
        c.executemany("DELETE FROM heads WHERE eid = ?", self.unheaded)
        c.executemany("INSERT OR IGNORE INTO heads VALUES (?,?,?)", self.heads)
        self._unindex_rewritten()
        c.executemany(_UPSERT_MEMORY, self.memories)
        c.executemany("INSERT OR REPLACE INTO placements VALUES (?,?,?,?,?,?,?)", self.placements)
        c.executemany("INSERT OR IGNORE INTO keywords VALUES (?,?,?)", self.keywords)
        c.executemany("INSERT OR IGNORE INTO boot VALUES (?,?)", self.boot)
        c.executemany(_UPSERT_ENTITY, self.entities)
        _insert(c, "observations", self.new_observations, self.observations)
        _insert(c, "relations", self.new_relations, self.relations)
        c.executemany("INSERT OR REPLACE INTO reviews VALUES (?,?,?,?,?,?,?)", sorted(self.reviews))
        for ns in self.glossaries:
            c.execute(
                "INSERT INTO glossary (ns, version) VALUES (?, 1) "
                "ON CONFLICT (ns) DO UPDATE SET version = version + 1",
                (ns,),
            )
