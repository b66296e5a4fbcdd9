"""The knowledge graph as the official memory server shows it, read from the fold.

Elements (namespace ``ns``; ``slot`` is the decimal occurrence number of a duplicate):
- ``("entity", ns, name)`` -> ``{"type": entityType}`` plus ``"after": hlc`` when the entity was
  re-created over a tombstone: observations stamped at or before ``after`` belong to the deleted
  incarnation (added on another machine while it was being deleted) and stay hidden.
- ``("obs", ns, entity, text, slot)`` -> ``{}``: one occurrence of an observation (a long text
  is keyed by its digest and kept in the value as ``{"text": ...}``).
- ``("rel", ns, from, to, relationType, slot)`` -> ``{}``: one occurrence of a relation.

The official server keeps one file in insertion order and appends whatever is created; here the
order is the order of the winning ops ``(hlc, node, seq)``, which is insertion order on one
machine (ops of a batch are stamped in the order the call listed them), and a total order that
every replica agrees on across machines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from noon.core import elements
from noon.core.elements import ENTITY, KG_KINDS, OBS, entity_key
from noon.core.fold import Element, Fold
from noon.core.ops import Key

HASHED = "sha256:"
"""Prefix of an observation key part that stands for a long text kept in the value."""
MAX_PLAIN_OBS = 1024


def obs_id(text: str) -> str:
    """The key part of an observation: the text itself, or its digest when it is long (the text
    then lives in the value), so any observation fits a key."""
    if len(text) <= MAX_PLAIN_OBS and not text.startswith(HASHED):
        return text
    return HASHED + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def obs_key(ns: str, entity: str, text: str, slot: int) -> Key:
    return elements.obs_key(ns, entity, obs_id(text), slot)


def obs_value(text: str) -> dict[str, Any]:
    return {} if obs_id(text) == text else {"text": text}


def obs_text(key: Key, el: Element) -> str:
    val = el.winner.val
    return val["text"] if val and isinstance(val.get("text"), str) else key[3]


@dataclass
class NamespaceIndex:
    """Keys of one namespace, grouped for the lookups the tools need. Holds keys whatever their
    state (live or tombstoned); readers check the fold.

    Also caches what reads derive from the fold (each entity as shown, the entity order, the
    relation list); :meth:`Index.add` drops exactly the parts a changed key can affect, so a read
    after a write recomputes one entity, not the graph."""

    entities: set[Key] = field(default_factory=set)
    obs: dict[str, set[Key]] = field(default_factory=dict)
    """entity name -> its observation keys"""
    rels: set[Key] = field(default_factory=set)
    rels_by_end: dict[str, set[Key]] = field(default_factory=dict)
    """entity name -> relation keys that start or end there"""
    shown: dict[str, Shown | None] = field(default_factory=dict)
    order: list[str] | None = None
    moved: set[str] = field(default_factory=set)
    """Entities whose place in ``order`` may have changed since it was computed."""
    relations: list[dict[str, str]] | None = None


SEPARATOR = "\x00"


@dataclass(frozen=True)
class Shown:
    """An entity as the tools show it, and its lower-cased texts for search, joined by
    :data:`SEPARATOR` so one substring test covers them all."""

    entity: dict[str, Any]
    lowered: str


class Index:
    """Incremental index of the knowledge-graph keys of a fold: feed it the keys that changed."""

    def __init__(self) -> None:
        self.spaces: dict[str, NamespaceIndex] = {}

    @classmethod
    def build(cls, fold: Fold) -> Index:
        index = cls()
        index.add(fold.elements)
        return index

    def add(self, keys: Iterable[Key]) -> None:
        for key in keys:
            kind = key[0]
            if kind not in KG_KINDS:
                continue
            space = self.spaces.get(key[1])
            if space is None:
                space = self.spaces[key[1]] = NamespaceIndex()
            if kind == ENTITY:
                space.entities.add(key)
                space.shown.pop(key[2], None)
                space.moved.add(key[2])
            elif kind == OBS:
                space.obs.setdefault(key[2], set()).add(key)
                space.shown.pop(key[2], None)
            else:
                space.rels.add(key)
                space.rels_by_end.setdefault(key[2], set()).add(key)
                space.rels_by_end.setdefault(key[3], set()).add(key)
                space.relations = None

    def space(self, ns: str) -> NamespaceIndex:
        space = self.spaces.get(ns)
        if space is None:
            space = self.spaces[ns] = NamespaceIndex()
        return space


def _order(el: Element) -> tuple[int, str, int]:
    return el.winner.order


class View:
    """Read access to the live knowledge graph of one namespace."""

    def __init__(self, fold: Fold, index: Index, ns: str) -> None:
        self.fold = fold
        self.ns = ns
        self.space = index.space(ns)

    def live(self, key: Key) -> Element | None:
        el = self.fold.elements.get(key)
        return None if el is None or el.deleted else el

    def entity(self, name: str) -> Element | None:
        return self.live(entity_key(self.ns, name))

    def entity_names(self) -> list[str]:
        """Live entity names in order. Kept incrementally: the usual change (an entity created
        or deleted) costs one pass over the list, not a sort."""
        space = self.space
        if space.order is not None and space.moved:
            moved, space.moved = space.moved, set()
            kept = [n for n in space.order if n not in moved]
            live = [(el, n) for n in moved if (el := self.entity(n)) is not None]
            live.sort(key=lambda pair: _order(pair[0]))
            last = self.entity(kept[-1]) if kept else None
            if not live or last is None or _order(live[0][0]) > _order(last):
                space.order = kept + [n for _, n in live]
            else:
                space.order = None
        if space.order is None:
            space.moved.clear()
            every = [(el, k) for k in space.entities if (el := self.live(k)) is not None]
            every.sort(key=lambda pair: _order(pair[0]))
            space.order = [k[2] for _, k in every]
        return space.order

    def observation_elements(self, name: str) -> list[tuple[Key, Element]]:
        """The visible observation occurrences of a live entity, in order."""
        ent = self.entity(name)
        if ent is None:
            return []
        assert ent.winner.val is not None
        after = ent.winner.val.get("after", 0)
        found = []
        for k in self.space.obs.get(name, ()):
            el = self.live(k)
            if el is not None and el.winner.hlc > after:
                found.append((k, el))
        found.sort(key=lambda pair: _order(pair[1]))
        return found

    def observations(self, name: str) -> list[str]:
        """A fresh list (callers may extend it)."""
        shown = self.shown(name)
        return list(shown.entity["observations"]) if shown else []

    def shown(self, name: str) -> Shown | None:
        cache = self.space.shown
        if name in cache:
            return cache[name]
        ent = self.entity(name)
        if ent is None:
            cache[name] = None
            return None
        assert ent.winner.val is not None
        observations = [obs_text(k, el) for k, el in self.observation_elements(name)]
        etype = ent.winner.val["type"]
        shown = Shown(
            {"name": name, "entityType": etype, "observations": observations},
            SEPARATOR.join(js_lower(t) for t in (name, etype, *observations)),
        )
        cache[name] = shown
        return shown

    def entity_dict(self, name: str) -> dict[str, Any]:
        """The entity as shown (shared with the cache: do not modify)."""
        shown = self.shown(name)
        assert shown is not None
        return shown.entity

    def relation_elements(self, keys: Iterable[Key] | None = None) -> list[tuple[Key, Element]]:
        pool = self.space.rels if keys is None else keys
        found = [(k, el) for k in pool if (el := self.live(k)) is not None]
        found.sort(key=lambda pair: _order(pair[1]))
        return found

    def relations_touching(self, names: Iterable[str]) -> list[tuple[Key, Element]]:
        keys: set[Key] = set()
        for name in names:
            keys |= self.space.rels_by_end.get(name, set())
        return self.relation_elements(keys)

    def relations(self) -> list[dict[str, str]]:
        if self.space.relations is None:
            self.space.relations = [relation_dict(k) for k, _ in self.relation_elements()]
        return self.space.relations

    def graph(self) -> dict[str, Any]:
        return {
            "entities": [self.entity_dict(n) for n in self.entity_names()],
            "relations": self.relations(),
        }

    def search(self, query: str) -> dict[str, Any]:
        """Case-insensitive substring match on name, type or any observation."""
        q = js_lower(query)
        entities = []
        for name in self.entity_names():
            shown = self.shown(name)
            assert shown is not None
            if q in shown.lowered and (SEPARATOR not in q or self._matches(shown, q)):
                entities.append(shown.entity)
        return self._with_relations(entities)

    @staticmethod
    def _matches(shown: Shown, q: str) -> bool:
        """The exact test, for the rare query that contains the separator itself."""
        e = shown.entity
        texts = (e["name"], e["entityType"], *e["observations"])
        return any(q in js_lower(t) for t in texts)

    def open(self, names: Iterable[str]) -> dict[str, Any]:
        wanted = set(names)
        entities = [self.entity_dict(n) for n in self.entity_names() if n in wanted]
        return self._with_relations(entities)

    def _with_relations(self, entities: list[dict[str, Any]]) -> dict[str, Any]:
        names = [e["name"] for e in entities]
        rels = [relation_dict(k) for k, _ in self.relations_touching(names)]
        return {"entities": entities, "relations": rels}


def relation_dict(key: Key) -> dict[str, str]:
    return {"from": key[2], "to": key[3], "relationType": key[4]}


def js_lower(text: str) -> str:
    """JavaScript's ``toLowerCase``: full Unicode lower-casing with the final-sigma rule, which is
    what Python's ``str.lower`` implements too."""
    return text.lower()
