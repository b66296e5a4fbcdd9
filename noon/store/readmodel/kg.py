"""The knowledge graph of one namespace read from the read model: a
:class:`~noon.kg.graph.KgReader` whose answers are queries.

``read_graph`` reads the namespace's entities, observations and relations in three ordered
queries (no per-entity round trips). ``search_nodes`` asks the trigram index for the entities
whose document contains the query and tests each candidate's document in the same statement (a
substring test, exactly the official one, since every document and query is lower-cased the
same way); a query shorter than a trigram tests every document instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from noon.core.elements import entity_key, obs_key, rel_key
from noon.core.ops import Key
from noon.kg.graph import js_lower, matches, relation_shown
from noon.store.readmodel.apply import chunks
from noon.store.readmodel.documents import SEPARATOR, entity_texts
from noon.store.readmodel.name_sets import name_set
from noon.store.readmodel.rows import key_text
from noon.store.readmodel.schema import ENTITIES_BY_NAME, OBS_TEXT
from noon.store.readmodel.state import Database, StoredElement, load_element

_ORDER = "w_hlc, w_node, w_seq"
Order = tuple[int, str, int]
"""Where an element stands in write order: its winning op's (hlc, node, seq)."""
Entity = tuple[Order, dict[str, Any]]
"""An entity's place and the entity as read_graph shows it (name, type, observations in write
order)."""
RelationId = tuple[str, str, str, str]
"""A relation row: (from, to, relation type, slot)."""
_BY_NAME = f"INDEXED BY {ENTITIES_BY_NAME}"


def _shown(name: str, etype: str, observations: list[str]) -> dict[str, Any]:
    return {"name": name, "entityType": etype, "observations": observations}


def graph_of(entities: dict[str, Entity], relations: Iterable[RelationId]) -> dict[str, Any]:
    """read_graph's value of the entries given, in their order: new lists holding the entries'
    own entity objects."""
    return {
        "entities": [entity for _, entity in entities.values()],
        "relations": [relation_shown(src, dst, rtype) for src, dst, rtype, _ in relations],
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
                f"SELECT obs, slot, {OBS_TEXT} FROM observations WHERE ns = ? AND entity = ? "
                f"AND w_hlc > ? ORDER BY {_ORDER}",
                (self.ns, name, row[0]),
            )
        ]

    def observations_of(self, names: Iterable[str]) -> dict[str, list[str]]:
        """The observations shown for each live entity among ``names``, in write order (a
        name with no live entity is absent): :data:`~noon.store.readmodel.apply.IN_CHUNK`
        names a statement, not three statements per name."""
        rows: list[tuple[Any, ...]] = []
        for part in chunks(sorted(set(names))):
            marks = ",".join("?" * len(part))
            rows += self.conn.execute(
                f"SELECT name, type, after FROM entities {_BY_NAME} "
                f"WHERE ns = ? AND name IN ({marks})",
                (self.ns, *part),
            ).fetchall()
        return {e["name"]: e["observations"] for e in self._show(rows)}

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
        return _shown(name_, etype, observations)

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
        """The live relations from or to any of ``names``, in write order."""
        return [
            rel_key(self.ns, src, dst, rtype, int(slot))
            for src, dst, rtype, slot in self._touching(names, "src, dst, rtype, slot")
        ]

    def _touching(self, names: Iterable[str], columns: str) -> sqlite3.Cursor:
        """``columns`` of the live relations from or to any of ``names``, in write order, from
        one statement: each end's index searched for every name (an OR would scan the
        namespace), so the cost follows the names asked, not the namespace, and SQLite sorts
        the rows by their place. A relation between two of the names comes from its source's
        search alone; each winning op writes one element, so no two rows share their place."""
        rows = f"{_ORDER}, {columns}"
        wanted, param = name_set(list(names))
        return self.conn.execute(
            f"SELECT {columns} FROM (SELECT {rows} FROM relations "
            f"WHERE ns = ?1 AND src IN ({wanted}) UNION ALL SELECT {rows} FROM relations "
            f"INDEXED BY relations_by_dst WHERE ns = ?1 AND dst IN ({wanted}) "
            f"AND src NOT IN ({wanted})) ORDER BY {_ORDER}",
            (self.ns, param),
        )

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
            f"SELECT entity, w_hlc, {OBS_TEXT} FROM observations WHERE ns = ? "
            f"ORDER BY entity, {_ORDER}",
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
                f"SELECT {OBS_TEXT} FROM observations WHERE ns = ? AND entity = ? "
                f"AND w_hlc > ? ORDER BY {_ORDER}",
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
        """The entities whose document holds the lower-cased query, and their relations. The
        document is the entity's lower-cased texts joined by :data:`SEPARATOR`, so for a query
        without it, the query being in the document is the official test on each text. A query
        of three characters or more is asked of the trigram index as the phrase of its
        trigrams, which a document holds exactly where it holds the query; a shorter one is
        looked for in every document (``instr``). FTS5 reads its query as a C string: a NUL
        would end it mid-phrase, so a query holding one (or the separator) takes every entity
        and the official test in Python.
        """
        q = js_lower(query)
        if SEPARATOR in q or "\x00" in q:
            entities = [
                e
                for e in self._show(self._rows("1", ()))
                if matches((e["name"], e["entityType"], *e["observations"]), query)
            ]
        elif len(q) >= 3:  # the phrase of its trigrams, consecutive: the substring itself
            entities = self._show(self._rows("f.doc MATCH ?", ('"' + q.replace('"', '""') + '"',)))
        else:  # shorter than a trigram: the index cannot answer, every document is tested
            entities = self._show(self._rows("instr(f.doc, ?) > 0", (q,)))
        return self._with_relations(entities)

    def _rows(self, test: str, params: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """``(name, type, after)`` of this namespace's entities whose document passes
        ``test``, in write order: the documents first, then each one's row by its id."""
        return self.conn.execute(
            "SELECT e.name, e.type, e.after FROM entity_fts f "
            f"CROSS JOIN entities e ON e.id = f.rowid WHERE {test} AND e.ns = ? "
            "ORDER BY e.w_hlc, e.w_node, e.w_seq, e.id",
            (*params, self.ns),
        ).fetchall()

    def _show(self, rows: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
        """The entities of ``(name, type, after)`` rows as shown, in the rows' order, with their
        observations read in one statement (asked as one join, SQLite would probe the index
        once per entity of the namespace; the index gives each entity's in write order)."""
        shown: dict[str, tuple[int, list[str]]] = {}
        entities = []
        for name, etype, after in rows:
            observations: list[str] = []
            shown[name] = (after, observations)
            entities.append(_shown(name, etype, observations))
        wanted, param = name_set(shown)
        for entity, text, stamp in self.conn.execute(
            f"SELECT entity, {OBS_TEXT}, w_hlc FROM observations "
            f"WHERE ns = ?1 AND entity IN ({wanted}) ORDER BY entity, {_ORDER}",
            (self.ns, param),
        ):
            after, observations = shown[entity]
            if stamp > after:  # at or before it: the deleted incarnation's
                observations.append(text)
        return entities

    def open(self, names: Iterable[str]) -> dict[str, Any]:
        """The entities named, in write order, with their relations: looked up
        :data:`~noon.store.readmodel.apply.IN_CHUNK` names a statement, then shown as
        ``search_nodes`` shows its hits."""
        rows: list[tuple[Any, ...]] = []
        for part in chunks(sorted(set(names))):
            marks = ",".join("?" * len(part))
            rows += self.conn.execute(
                f"SELECT {_ORDER}, id, name, type, after FROM entities {_BY_NAME} "
                f"WHERE ns = ? AND name IN ({marks})",
                (self.ns, *part),
            ).fetchall()
        rows.sort()
        return self._with_relations(self._show(row[4:] for row in rows))

    def _with_relations(self, entities: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "entities": entities,
            "relations": [
                relation_shown(src, dst, rtype)
                for src, dst, rtype in self._touching(
                    (e["name"] for e in entities), "src, dst, rtype"
                )
            ],
        }
