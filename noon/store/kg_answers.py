"""read_graph's answer, kept between calls and patched after a change.

read_graph builds the whole namespace (three scans and a dict per entity: about 30 ms of CPU at
10k entities) and renders it; a client often reads the graph at the start of each conversation,
unchanged since the last or changed by a few writes. So each namespace's last answer is kept:
its rendered text, what it shows (each entity with its observations, each relation, with its
place in write order), and what it was read from: the read model's generation in the snapshot it
was read in, and the connection (a damaged read model is replaced by a new file, whose
generations start again). Every fold that changes an element moves the generation, whichever
process folded it and whichever machine wrote the ops (a replica's shard is folded like the own
one), the rule a write already relies on to know its plan is still current
(:meth:`noon.store.store.Store.write`). Each read still refreshes first, so what it shows is as
current as a read that builds.

A read whose snapshot holds the kept generation answers with the kept text, and with a graph of
its own whose entity objects are the kept ones (lists of them: well under a millisecond at 10k
entities, where parsing the text back took about 8 ms): nothing may change them, and nothing
does (the read_graph tool hands them to the SDK, which only reads and serialises them).
A read after a change asks the read model which keys changed since the kept generation (its
``changes`` table, the record subscriptions are told from) and reads just those again: each
entity an entity or observation key names, with its observations, and each relation a key
names, each put in its place in write order (a replica's op can come before what is kept; one
whose place did not move, as an entity given an observation, stays where it was); past
:data:`PATCH_KEYS` keys, or when the changes are no longer known (a reset, a rebuild, too many
generations ago), it builds. At most :data:`KEEP_CHARS` characters of text are kept per store,
the namespace read least recently dropped first; a larger answer is not kept.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice, pairwise
from typing import Any, TypeVar

from noon.core.elements import ENTITY, OBS, REL
from noon.core.ops import Key
from noon.kg.text import pretty
from noon.store.readmodel.kg import Entity, Order, RelationId, SqlKg, graph_of
from noon.store.store import Store

T = TypeVar("T")
V = TypeVar("V")

KEEP_CHARS = 4 * 2**20
"""Characters of rendered answers kept per store: a graph of about 30k entities with two short
observations each. What they show is kept beside them, about 4.6 times the text in memory (so
at most some 23 MB per store); the parsed graph a build makes is about four times the text."""
PATCH_KEYS = 1_000
"""Changed keys past which read_graph builds the graph again instead of patching its kept
entries (a fold of more logs a reset, so its keys are not known anyway)."""


@dataclass(frozen=True)
class _Kept:
    conn: sqlite3.Connection
    generation: int
    text: str
    entities: dict[str, Entity]
    """What the text shows, with each element's place in write order (to patch it); the
    entity objects are handed to every reader and never changed (a patch replaces them)."""
    relations: dict[RelationId, Order]


class _Answers:
    """The kept answers of one store, by namespace, least recently read first."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, namespace: str, conn: sqlite3.Connection) -> _Kept | None:
        """The namespace's kept answer read on ``conn``, whatever its generation."""
        with self._lock:
            kept = self._kept.get(namespace)
            if kept is None or kept.conn is not conn:
                return None
            self._kept.move_to_end(namespace)
            return kept

    def put(self, namespace: str, kept: _Kept) -> None:
        with self._lock:
            self._kept.pop(namespace, None)
            if len(kept.text) > KEEP_CHARS:
                return
            self._kept[namespace] = kept
            while sum(len(k.text) for k in self._kept.values()) > KEEP_CHARS:
                self._kept.popitem(last=False)


_stores: weakref.WeakKeyDictionary[Store, _Answers] = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def _answers(store: Store) -> _Answers:
    with _stores_lock:
        answers = _stores.get(store)
        if answers is None:
            answers = _stores[store] = _Answers()
        return answers


def _read(store: Store, namespace: str) -> tuple[str, dict[str, Any] | _Kept]:
    """The namespace's graph as text, and the graph itself when this read made it (else the
    kept answer it shows)."""
    answers = _answers(store)
    with store.lock:
        store.refresh()
        with store.graph.reading():
            conn = store.model.conn
            generation = store.model.generation  # in the snapshot the graph is read from
            kept = answers.get(namespace, conn)
            if kept is not None and kept.generation == generation:
                return kept.text, kept
            view = store.kg(namespace)
            patched = _patched(kept, view, store.model.changed_since) if kept else None
            entities, relations = patched or view.entries()
    graph = graph_of(entities, relations)
    text = pretty(graph)
    answers.put(namespace, _Kept(conn, generation, text, entities, relations))
    return text, graph


def _patched(
    kept: _Kept, view: SqlKg, changed_since: Callable[[int], set[Key] | None]
) -> tuple[dict[str, Entity], dict[RelationId, Order]] | None:
    """The kept entries with what changed since they were read read again (each changed entity
    with its observations, each changed relation) and put in their place in write order; None
    when what changed is not known or is more than :data:`PATCH_KEYS` keys."""
    keys = changed_since(kept.generation)
    if keys is None or len(keys) > PATCH_KEYS:
        return None
    names = {k[2] for k in keys if k[0] in (ENTITY, OBS) and k[1] == view.ns}
    rels = {(k[2], k[3], k[4], k[5]) for k in keys if k[0] == REL and k[1] == view.ns}
    entities, relations = dict(kept.entities), dict(kept.relations)
    moved_entities = sum(
        _put(entities, name, view.entity_entry(name), lambda entity: entity[0]) for name in names
    )
    moved_relations = sum(
        _put(relations, rel, view.relation_entry(rel), lambda place: place) for rel in rels
    )
    return (
        _in_order(entities, lambda entity: entity[0], moved_entities),
        _in_order(relations, lambda place: place, moved_relations),
    )


def _put(entries: dict[T, V], key: T, entry: V | None, place: Callable[[V], Order]) -> bool:
    """Put an entry read again in ``entries`` (None: it is gone). One whose place in write order
    is the kept one's (an entity given an observation: its place is its own op's) stays where it
    is; any other goes to the end. True when it went to the end."""
    kept = entries.get(key)
    if entry is not None and kept is not None and place(kept) == place(entry):
        entries[key] = entry
        return False
    entries.pop(key, None)
    if entry is None:
        return False
    entries[key] = entry
    return True


def _in_order(entries: dict[T, V], place: Callable[[V], Order], moved: int) -> dict[T, V]:
    """``entries``, in write order but for the last ``moved`` (read again, put at the end), in
    write order: as they are when those already come last in it (an append)."""
    tail = [place(value) for value in islice(reversed(entries.values()), moved + 1)]
    if all(later > earlier for later, earlier in pairwise(tail)):
        return entries
    return dict(sorted(entries.items(), key=lambda item: place(item[1])))


def graph_text(store: Store, namespace: str) -> str:
    """read_graph's text (``JSON.stringify(graph, null, 2)``), current as of this call."""
    return _read(store, namespace)[0]


def graph_answer(store: Store, namespace: str) -> tuple[str, dict[str, Any]]:
    """read_graph's text and its structured content, current as of this call."""
    text, graph = _read(store, namespace)
    if isinstance(graph, _Kept):
        return text, graph_of(graph.entities, graph.relations)
    return text, graph
