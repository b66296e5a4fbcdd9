"""The search documents: one per live memory (``memory_fts``), one per live entity
(``entity_fts``), rebuilt for exactly what a transaction changed.

A memory's document has four columns that ``search_memory`` weighs differently: its text, the
words of up to four of its URIs, the disclosures of its placements, and its keywords. Moving or
placing a node changes the URIs of its whole subtree, so every node below it is rebuilt too.
Scripts written without spaces are split into one token per character (``unicode61`` would
keep a whole CJK run as one token); queries are split the same way and searched as phrases.

The index is contentless (no second copy of the texts): SQLite forgets a document only when
told the values it indexed. Those are ``memories.text`` (segmented) and the three short columns
kept in ``memory_docs``; so a memory's document is taken out (:func:`unindex`) before its
``memories`` row changes or goes, and written again afterwards. Each document taken out or
written adds one to ``meta``'s :data:`WRITTEN`, in the same transaction: how far the index can
have moved since a reader looked (:mod:`.weightless`).

An entity's document is the lower-cased name, type and visible observations joined by
:data:`SEPARATOR` (:func:`entity_document`), under a trigram index: ``search_nodes``'s
substring test on it is the official server's, exactly.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from noon.graph.reader import Placement, closure, walk_uris
from noon.graph.search import cjk
from noon.kg.graph import js_lower
from noon.store.readmodel.schema import ENTITIES_BY_NAME, OBS_TEXT

SEPARATOR = "\x1f"
"""Between an entity's texts in its document, and in place of a NUL within one: the trigram
index reads a document only up to its first NUL (a word after one was never found, where the
official server finds it). A query holding neither is held by the document exactly where one
of the texts holds it; one holding either is tested in Python (:meth:`.kg.SqlKg.search`)."""
URIS_INDEXED = 4
BULK = 500
"""Memories whose documents are rebuilt with one query each for their rows and keywords."""
WRITTEN = "documents_written"
"""The ``meta`` key counting the memory documents written or taken out since the file was made."""
PRELOAD = 500
"""Above this many changed nodes of one namespace, its placements are read in one query
instead of node by node (a rebuild or a large import)."""
PENDING = "documents_pending"
"""The ``meta`` key set while a fold's committed transactions left search documents to its
last one (:class:`Dirty`): a fold that stopped before it (killed, a full disk) leaves it, and
the next fold rebuilds every document (which ones were left is not recorded)."""


def entity_document(texts: Iterable[str]) -> str:
    """An entity's search document: its texts lower-cased as the official server lowers them,
    joined by :data:`SEPARATOR`, each NUL written as the separator too."""
    return SEPARATOR.join(js_lower(t) for t in texts).replace("\x00", SEPARATOR)


def quoted(term: str) -> str:
    """``term`` as one FTS5 phrase, split as the documents were (:func:`segment`)."""
    return '"' + segment(term).strip().replace('"', '""') + '"'


def segment(text: str) -> str:
    """Text as the memory index tokenizes it: every CJK character a word of its own. (ASCII
    text, most of it, holds none: ``isascii`` answers that far faster than the search.)"""
    if text.isascii() or not cjk().search(text):
        return text
    return cjk().sub(r" \g<0> ", text)


@dataclass
class Dirty:
    """The documents to rebuild, gathered over every transaction of one fold and written by its
    last (:func:`refresh`): a catch-up commits every ``chunk_ops`` ops, and a memory its later
    transactions touch again would have its document written, taken out and written again
    each time (905k documents written or taken out for 227k memories in a 1M-op catch-up).
    Meanwhile a document is only ever taken out (before the text it indexed changes), so the
    index never holds one its tables could not take out again."""

    everything: bool = False
    """Rebuild every document (a fold found :data:`PENDING` left by one that stopped)."""
    memories: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Namespace -> nodes whose text, keywords or placements changed."""
    moved: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Namespace -> nodes placed or unplaced: the URIs of their subtrees may differ."""
    entities: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Namespace -> entities whose name, type or visible observations may differ."""
    new_entities: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Those of :attr:`entities` whose element this fold folded first: no document of
    theirs is in the index to take out (a document is taken out with its ``entities`` row, and
    such an entity had none).

    Names are kept by namespace, not as (namespace, name) pairs: a fold keeps them until its
    last transaction, and at 200k entities the two sets of pairs took 37 MiB, the two sets of
    names 16 MiB."""

    def left(self) -> bool:
        """Whether any document is marked to rebuild."""
        return self.everything or bool(self.memories or self.moved or self.entities)


class Placements:
    """Placements of one namespace, from the table node by node, or all read at once."""

    def __init__(self, conn: sqlite3.Connection, ns: str, *, preload: bool) -> None:
        self.conn = conn
        self.ns = ns
        self.up: dict[str, list[Placement]] | None = None
        self.down: dict[str, list[str]] | None = None
        if preload:
            self.up, self.down = {}, {}
            for row in conn.execute(
                "SELECT parent, name, key_name, child, priority, disclosure FROM placements "
                "WHERE ns = ? ORDER BY parent, name",
                (ns,),
            ):
                pl = Placement(*row)
                self.up.setdefault(pl.child, []).append(pl)
                self.down.setdefault(pl.parent, []).append(pl.child)

    def parents(self, node: str) -> Sequence[Placement]:
        if self.up is not None:
            return self.up.get(node, ())
        return by_parent(
            Placement(*row)
            for row in self.conn.execute(
                "SELECT parent, name, key_name, child, priority, disclosure FROM placements "
                "INDEXED BY placements_by_child WHERE ns = ? AND child = ?",
                (self.ns, node),
            )
        )

    def children(self, node: str) -> Iterable[str]:
        if self.down is not None:
            return self.down.get(node, ())
        return [
            c
            for (c,) in self.conn.execute(
                "SELECT child FROM placements WHERE ns = ? AND parent = ?", (self.ns, node)
            )
        ]


def by_parent(placements: Iterable[Placement]) -> list[Placement]:
    """A node's placements in the order every reader walks them. Sorted here, not by SQL: with
    an ``ORDER BY`` the planner would rather scan the namespace in key order than use the index
    on the child."""
    return sorted(placements, key=lambda p: (p.parent, p.name))


def unindex(conn: sqlite3.Connection, ids: Iterable[int]) -> None:
    """Take the documents of memory rows ``ids`` (those that have one) out of the index, while
    their ``memories`` rows still hold the text indexed."""
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), BULK):
        part = wanted[start : start + BULK]
        marks = ",".join("?" * len(part))
        rows = conn.execute(
            "SELECT d.id, m.text, d.uri, d.disclosure, d.keywords FROM memory_docs d "
            f"JOIN memories m ON m.id = d.id WHERE d.id IN ({marks})",
            part,
        ).fetchall()
        conn.executemany(
            "INSERT INTO memory_fts (memory_fts, rowid, text, uri, disclosure, keywords) "
            "VALUES ('delete', ?, ?, ?, ?, ?)",
            [(mid, segment(text), uri, disc, kws) for mid, text, uri, disc, kws in rows],
        )
        conn.executemany("DELETE FROM memory_docs WHERE id = ?", [(r[0],) for r in rows])
        _count(conn, len(rows))


def refresh(conn: sqlite3.Connection, dirty: Dirty) -> None:
    if dirty.everything:
        for ns, node in conn.execute("SELECT ns, node FROM memories"):
            dirty.memories[ns].add(node)
        for ns, name in conn.execute("SELECT ns, name FROM entities"):
            dirty.entities[ns].add(name)
    for ns in sorted(dirty.memories.keys() | dirty.moved.keys()):
        _memories(conn, ns, dirty.memories.get(ns, set()), dirty.moved.get(ns, set()))
    for ns, names in sorted(dirty.entities.items()):
        _entities(conn, ns, sorted(names), dirty.new_entities.get(ns, set()))


def _memories(conn: sqlite3.Connection, ns: str, nodes: set[str], moved: set[str]) -> None:
    """Rebuild the documents of ``nodes`` and of every node below one of ``moved``, in the
    order of their row ids: FTS5 writes the terms it gathered out as a new segment whenever a
    document's rowid is lower than the one before, so documents in any other order leave many
    small segments to merge (200k documents in rowid order took 0.7 CPU s, shuffled within
    each 500 3.5 s; a catch-up's later transactions mix memories earlier ones numbered)."""
    lookup = Placements(conn, ns, preload=len(nodes) + len(moved) > PRELOAD)
    below: set[str] = set()  # every moved node's subtree, walked once
    for n in moved:
        if n not in below:
            below.update(closure(lookup.children, n))
    ordered = sorted(nodes | below)
    ids: list[int] = []
    for start in range(0, len(ordered), BULK):
        part = ordered[start : start + BULK]
        marks = ",".join("?" * len(part))
        ids.extend(
            i
            for (i,) in conn.execute(
                f"SELECT id FROM memories WHERE ns = ? AND node IN ({marks})", (ns, *part)
            )
        )
    ids.sort()
    unindex(conn, ids)  # every old document out first, then the new ones in, each in order
    for start in range(0, len(ids), BULK):
        _documents(conn, ids[start : start + BULK], lookup)


def _documents(conn: sqlite3.Connection, ids: list[int], lookup: Placements) -> None:
    """Write the documents of the memory rows ``ids`` (ascending; none has one now)."""
    marks = ",".join("?" * len(ids))
    found = conn.execute(
        f"SELECT id, node, text FROM memories WHERE id IN ({marks}) AND deleted = 0 ORDER BY id",
        ids,
    ).fetchall()
    kws: dict[str, list[str]] = {}
    names = [node for _, node, _ in found]
    if names:
        marks = ",".join("?" * len(names))
        for node, kw in sorted(
            conn.execute(
                f"SELECT node, keyword FROM keywords WHERE ns = ? AND node IN ({marks})",
                (lookup.ns, *names),
            )
        ):
            kws.setdefault(node, []).append(kw)
    rows = []
    for mid, node, text in found:
        uris = walk_uris(lookup.parents, node, URIS_INDEXED)
        rows.append(
            (
                mid,
                segment(text),
                segment(" ".join(" ".join((u.domain, *u.path)) for u, _ in uris)),
                segment(" ".join(pl.disclosure for pl in lookup.parents(node))),
                segment(" ".join(kws.get(node, ()))),
            )
        )
    conn.executemany(
        "INSERT INTO memory_fts (rowid, text, uri, disclosure, keywords) VALUES (?,?,?,?,?)",
        rows,
    )
    conn.executemany(
        "INSERT INTO memory_docs (id, uri, disclosure, keywords) VALUES (?,?,?,?)",
        [(mid, uri, disc, kws) for mid, _, uri, disc, kws in rows],
    )
    _count(conn, len(rows))


def _count(conn: sqlite3.Connection, documents: int) -> None:
    """Add ``documents`` to :data:`WRITTEN` (one statement per batch of documents)."""
    if documents:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
            (WRITTEN, documents),
        )


def entity_texts(conn: sqlite3.Connection, ns: str, name: str) -> tuple[int, list[str]] | None:
    """The entity's row id and its texts as shown: name, type, visible observations in order."""
    row = conn.execute(
        "SELECT id, type, after FROM entities WHERE ns = ? AND name = ?", (ns, name)
    ).fetchone()
    if row is None:
        return None
    eid, etype, after = row
    observations = [
        t
        for (t,) in conn.execute(
            f"SELECT {OBS_TEXT} FROM observations WHERE ns = ? AND entity = ? AND w_hlc > ? "
            "ORDER BY w_hlc, w_node, w_seq",
            (ns, name, after),
        )
    ]
    return eid, [name, etype, *observations]


def _entities(conn: sqlite3.Connection, ns: str, names: list[str], new: set[str]) -> None:
    """Rebuild the documents of the entities ``names`` (those still live), in the order of their
    row ids, as :func:`_memories` does and for the same reason: a fold's last transaction
    writes the documents of every entity its transactions touched, and in the order of their
    names the row ids of entities two transactions numbered alternate. The documents of those
    not ``new`` are taken out first."""
    ids: list[tuple[int, str]] = []
    for start in range(0, len(names), BULK):
        part = names[start : start + BULK]
        marks = ",".join("?" * len(part))
        ids.extend(
            conn.execute(
                f"SELECT id, name FROM entities INDEXED BY {ENTITIES_BY_NAME} "
                f"WHERE ns = ? AND name IN ({marks})",
                (ns, *part),
            )
        )
    ids.sort()
    conn.executemany(
        "DELETE FROM entity_fts WHERE rowid = ?",
        [(eid,) for eid, name in ids if name not in new],
    )
    for start in range(0, len(ids), BULK):
        _entity_documents(conn, ns, ids[start : start + BULK])


def _entity_documents(conn: sqlite3.Connection, ns: str, ids: list[tuple[int, str]]) -> None:
    """What :func:`entity_texts` gives, for the entities ``ids`` (row id and name, ascending;
    none has a document now) in two queries, written as their documents."""
    marks = ",".join("?" * len(ids))
    texts: dict[str, list[str]] = {}
    after: dict[str, int] = {}
    for name, etype, since in conn.execute(
        f"SELECT name, type, after FROM entities WHERE id IN ({marks})", [i for i, _ in ids]
    ):
        texts[name] = [name, etype]
        after[name] = since
    for entity, text, stamp in conn.execute(
        f"SELECT entity, {OBS_TEXT}, w_hlc FROM observations "
        f"WHERE ns = ? AND entity IN ({marks}) ORDER BY entity, w_hlc, w_node, w_seq",
        (ns, *(name for _, name in ids)),
    ):
        if stamp > after[entity]:
            texts[entity].append(text)
    conn.executemany(
        "INSERT INTO entity_fts (rowid, doc) VALUES (?, ?)",
        [(eid, entity_document(texts[name])) for eid, name in ids],
    )
