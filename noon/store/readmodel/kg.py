"""The knowledge graph of one namespace read from the read model: a
:class:`~noon.kg.graph.KgReader` whose answers are queries.

``read_graph`` reads the namespace's entities, observations and relations in three ordered
queries (no per-entity round trips). ``search_nodes`` asks the trigram index for the entities
whose document contains the query (a substring test, exactly the official one, since every
document and query is lower-cased the same way) and checks each candidate; a query shorter than
a trigram scans the documents instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from noon.core.elements import entity_key, obs_key, rel_key
from noon.core.ops import Key
from noon.kg.graph import js_lower, matches, relation_dict
from noon.store.readmodel.apply import chunks
from noon.store.readmodel.documents import SEPARATOR, entity_texts
from noon.store.readmodel.rows import key_text
from noon.store.readmodel.state import Database, StoredElement, load_element

_ORDER = "w_hlc, w_node, w_seq"
Order = tuple[int, str, int]
"""Where an element stands in write order: its winning op's (hlc, node, seq)."""
Entity = tuple[Order, dict[str, Any]]
"""An entity's place and the entity as read_graph shows it (name, type, observations in write
order)."""
RelationId = tuple[str, str, str, str]
"""A relation row: (from, to, relation type, slot)."""


def _shown(name: str, etype: str, observations: list[str]) -> dict[str, Any]:
    return {"name": name, "entityType": etype, "observations": observations}


def graph_of(entities: dict[str, Entity], relations: Iterable[RelationId]) -> dict[str, Any]:
    """read_graph's value of the entries given, in their order: new lists holding the entries'
    own entity objects."""
    return {
        "entities": [entity for _, entity in entities.values()],
        "relations": [
            {"from": src, "to": dst, "relationType": rtype} for src, dst, rtype, _ in relations
        ],
    }


class SqlKg:
    def __init__(self, db: Database, ns: str) -> None:
        self._db = db
        self.ns = ns

    @property
    def conn(self) -> sqlite3.Connection:
        return self._db.conn

    def entity(self, name: str) -> StoredElement | None:
        row = self.conn.execute(
            "SELECT 1 FROM entities WHERE ns = ? AND name = ?", (self.ns, name)
        ).fetchone()
        return None if row is None else load_element(self.conn, entity_key(self.ns, name))

    def entity_states(self, names: Iterable[str]) -> dict[str, int | None]:
        """Of ``names``, each one this namespace holds an entity element for: ``None`` while the
        entity is live, the stamp of its winning tombstone once it is deleted (a name never
        created is absent). Two queries per :data:`~noon.store.readmodel.apply.IN_CHUNK`
        names, where asking name by name took two per name (a bulk create_entities asks for
        every entity it lists)."""
        states: dict[str, int | None] = {}
        for part in chunks(sorted(set(names))):
            marks = ",".join("?" * len(part))
            for (name,) in self.conn.execute(
                f"SELECT name FROM entities WHERE ns = ? AND name IN ({marks})", (self.ns, *part)
            ):
                states[name] = None
            gone = {key_text(entity_key(self.ns, n)): n for n in part if n not in states}
            if not gone:
                continue
            # a winner whose op is not held is no element, as load_element finds it
            for kt, hlc in self.conn.execute(
                "SELECT e.key, o.hlc FROM elements e "
                "JOIN ops o ON o.node = e.w_node AND o.seq = e.w_seq "
                f"WHERE e.key IN ({','.join('?' * len(gone))})",
                list(gone),
            ):
                states[gone[kt]] = hlc
        return states

    def entity_names(self) -> list[str]:
        return [
            n
            for (n,) in self.conn.execute(
                f"SELECT name FROM entities WHERE ns = ? ORDER BY {_ORDER}", (self.ns,)
            )
        ]

    def visible_observations(self, name: str) -> list[tuple[Key, str]]:
        row = self.conn.execute(
            "SELECT after FROM entities WHERE ns = ? AND name = ?", (self.ns, name)
        ).fetchone()
        if row is None:
            return []
        return [
            (obs_key(self.ns, name, obs, int(slot)), text)
            for obs, slot, text in self.conn.execute(
                "SELECT obs, slot, text FROM observations WHERE ns = ? AND entity = ? "
                f"AND w_hlc > ? ORDER BY {_ORDER}",
                (self.ns, name, row[0]),
            )
        ]

    def observations_of(self, names: Iterable[str]) -> dict[str, list[str]]:
        """The observations shown for each live entity among ``names``, in write order (a
        name with no live entity is absent): :data:`~noon.store.readmodel.apply.IN_CHUNK`
        names a query, not three queries per name."""
        after: dict[str, int] = {}
        for part in chunks(sorted(set(names))):
            marks = ",".join("?" * len(part))
            after.update(
                self.conn.execute(
                    f"SELECT name, after FROM entities WHERE ns = ? AND name IN ({marks})",
                    (self.ns, *part),
                )
            )
        observed = self._observed(after)
        return {name: observed.get(name, []) for name in after}

    def live_observation_keys(self, name: str) -> list[Key]:
        return [
            obs_key(self.ns, name, obs, int(slot))
            for obs, slot in self.conn.execute(
                f"SELECT obs, slot FROM observations WHERE ns = ? AND entity = ? ORDER BY {_ORDER}",
                (self.ns, name),
            )
        ]

    def entity_dict(self, name: str) -> dict[str, Any]:
        found = entity_texts(self.conn, self.ns, name)
        assert found is not None, name
        _, (name_, etype, *observations) = found
        return {"name": name_, "entityType": etype, "observations": observations}

    def live_relation_keys(self, src: str, dst: str, rtype: str) -> list[Key]:
        return [
            rel_key(self.ns, src, dst, rtype, int(slot))
            for (slot,) in self.conn.execute(
                "SELECT slot FROM relations WHERE ns = ? AND src = ? AND dst = ? AND rtype = ? "
                f"ORDER BY {_ORDER}",
                (self.ns, src, dst, rtype),
            )
        ]

    def relation_keys_touching(self, names: Iterable[str]) -> list[Key]:
        """The live relations from or to any of ``names``, in write order: looked up
        :data:`~noon.store.readmodel.apply.IN_CHUNK` names at a time by each end's index, so
        the cost follows the names asked, not the namespace."""
        rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        for part in chunks(sorted(set(names))):
            marks = ",".join("?" * len(part))
            for end, hint in (("src", ""), ("dst", "INDEXED BY relations_by_dst ")):
                # one index per end: an OR would scan the namespace
                for row in self.conn.execute(
                    f"SELECT src, dst, rtype, slot, {_ORDER} FROM relations {hint}"
                    f"WHERE ns = ? AND {end} IN ({marks})",
                    (self.ns, *part),
                ):
                    rows[row[:4]] = row
        ordered = sorted(rows.values(), key=lambda r: (r[4], r[5], r[6]))
        return [rel_key(self.ns, r[0], r[1], r[2], int(r[3])) for r in ordered]

    def graph(self) -> dict[str, Any]:
        """The whole graph in write order (:meth:`entries`, shown)."""
        return graph_of(*self.entries())

    def entries(self) -> tuple[dict[str, Entity], dict[RelationId, Order]]:
        """Every entity as shown and every relation, each with its place in write order, in
        that order: three scans of covering indexes (the ``*_in_order`` indexes carry every
        column read here), no row lookups, no join."""
        entities: dict[str, Entity] = {}
        after: dict[str, int | None] = {}
        for name, etype, stamp, hlc, node, seq in self.conn.execute(
            f"SELECT name, type, after, {_ORDER} FROM entities WHERE ns = ? ORDER BY {_ORDER}",
            (self.ns,),
        ):
            entities[name] = ((hlc, node, seq), _shown(name, etype, []))
            after[name] = stamp
        for entity, stamp, text in self.conn.execute(
            f"SELECT entity, w_hlc, text FROM observations WHERE ns = ? ORDER BY entity, {_ORDER}",
            (self.ns,),
        ):
            since = after.get(entity)
            if since is not None and stamp > since:
                entities[entity][1]["observations"].append(text)  # of its current incarnation
        relations: dict[RelationId, Order] = {
            (src, dst, rtype, slot): (hlc, node, seq)
            for src, dst, rtype, slot, hlc, node, seq in self.conn.execute(
                f"SELECT src, dst, rtype, slot, {_ORDER} FROM relations WHERE ns = ? "
                f"ORDER BY {_ORDER}",
                (self.ns,),
            )
        }
        return entities, relations

    def entity_entry(self, name: str) -> Entity | None:
        """One entity as :meth:`entries` shows it; None when none is shown by that name."""
        row = self.conn.execute(
            f"SELECT type, after, {_ORDER} FROM entities WHERE ns = ? AND name = ?",
            (self.ns, name),
        ).fetchone()
        if row is None:
            return None
        etype, since, hlc, node, seq = row
        observations = [
            text
            for (text,) in self.conn.execute(
                "SELECT text FROM observations WHERE ns = ? AND entity = ? AND w_hlc > ? "
                f"ORDER BY {_ORDER}",
                (self.ns, name, since),
            )
        ]
        return (hlc, node, seq), _shown(name, etype, observations)

    def relation_entry(self, rel: RelationId) -> Order | None:
        """One relation's place in write order; None when the graph does not hold it."""
        row = self.conn.execute(
            f"SELECT {_ORDER} FROM relations WHERE ns = ? AND src = ? AND dst = ? AND rtype = ? "
            "AND slot = ?",
            (self.ns, *rel),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def search(self, query: str) -> dict[str, Any]:
        q = js_lower(query)
        # FTS5 reads its query as a C string: a NUL would end it mid-phrase, so a query holding
        # one (like one holding the separator) scans the documents and is matched in Python.
        indexable = SEPARATOR not in q and "\x00" not in q
        if len(q) >= 3 and indexable:
            phrase = '"' + q.replace('"', '""') + '"'
            ids = self.conn.execute(
                "SELECT rowid FROM entity_fts WHERE doc MATCH ?", (phrase,)
            ).fetchall()
        else:  # shorter than a trigram (or holding the separator): scan the documents
            ids = self.conn.execute(
                "SELECT rowid FROM entity_fts WHERE instr(doc, ?) > 0",
                (q if indexable else "",),
            ).fetchall()
        entities = [
            e
            for e in self._shown(i for (i,) in ids)
            if matches((e["name"], e["entityType"], *e["observations"]), query)
        ]
        return self._with_relations(entities)

    def _shown(self, ids: Iterable[int]) -> list[dict[str, Any]]:
        """The entities of this namespace among the row ``ids``, as shown, in their order: their
        rows, then their observations, :data:`~noon.store.readmodel.apply.IN_CHUNK` at a time
        (asked as one join, SQLite would probe the index once per entity of the namespace)."""
        found: list[tuple[Any, ...]] = []
        for part in chunks(sorted(set(ids))):
            marks = ",".join("?" * len(part))
            found += self.conn.execute(
                f"SELECT id, {_ORDER}, name, type, after FROM entities "
                f"WHERE id IN ({marks}) AND +ns = ?",  # by rowid, not by a scan of ns
                (*part, self.ns),
            ).fetchall()
        found.sort(key=lambda row: row[1:4])
        observed = self._observed({row[4]: row[6] for row in found})
        return [
            {"name": name, "entityType": etype, "observations": observed.get(name, [])}
            for _, _, _, _, name, etype, _ in found
        ]

    def _observed(self, after: dict[str, int]) -> dict[str, list[str]]:
        """The observations of the entities ``after`` names (each with its stamp: those at or
        before it belong to a deleted incarnation), in write order; an entity without any is
        absent. :data:`~noon.store.readmodel.apply.IN_CHUNK` entities a query."""
        observed: dict[str, list[str]] = {}
        for part in chunks(sorted(after)):
            marks = ",".join("?" * len(part))
            for entity, text, w_hlc in self.conn.execute(
                "SELECT entity, text, w_hlc FROM observations "
                f"WHERE ns = ? AND entity IN ({marks}) ORDER BY entity, {_ORDER}",
                (self.ns, *part),
            ):
                if w_hlc > after[entity]:
                    observed.setdefault(entity, []).append(text)
        return observed

    def open(self, names: Iterable[str]) -> dict[str, Any]:
        """The entities named, in write order, with their relations: looked up
        :data:`~noon.store.readmodel.apply.IN_CHUNK` names a query, then shown as
        ``search_nodes`` shows its hits (three queries per entity before)."""
        ids: list[int] = []
        for part in chunks(sorted(set(names))):
            marks = ",".join("?" * len(part))
            ids += [
                i
                for (i,) in self.conn.execute(
                    f"SELECT id FROM entities WHERE ns = ? AND name IN ({marks})", (self.ns, *part)
                )
            ]
        return self._with_relations(self._shown(ids))

    def _with_relations(self, entities: list[dict[str, Any]]) -> dict[str, Any]:
        rels = self.relation_keys_touching(e["name"] for e in entities)
        return {"entities": entities, "relations": [relation_dict(k) for k in rels]}
