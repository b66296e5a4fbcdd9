"""The knowledge graph as the official memory server shows it, read from folded elements.

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

Two readers answer the :class:`KgReader` questions: the machine's read model
(:class:`noon.store.readmodel.kg.SqlKg`), which the tools use, and :class:`View` over an in-memory
fold, which the tests hold the read model to. :class:`View` is written to be obviously right,
not fast: it scans the fold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, Protocol

from noon.core import elements
from noon.core.elements import ENTITY, OBS, REL, entity_key
from noon.core.fold import Element, Fold
from noon.core.ops import Key, Op

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


def obs_text(key: Key, winner: Op) -> str:
    """The observation an ``obs`` element holds (its key part, or the long text in its value)."""
    val = winner.val
    return val["text"] if val and isinstance(val.get("text"), str) else key[3]


def relation_dict(key: Key) -> dict[str, str]:
    return {"from": key[2], "to": key[3], "relationType": key[4]}


def js_lower(text: str) -> str:
    """JavaScript's ``toLowerCase``: full Unicode lower-casing with the final-sigma rule, which is
    what Python's ``str.lower`` implements too."""
    return text.lower()


def matches(texts: Iterable[str], query: str) -> bool:
    """``search_nodes``' test: the lower-cased query is a substring of the lower-cased name,
    type or any observation."""
    q = js_lower(query)
    return any(q in js_lower(t) for t in texts)


class KgReader(Protocol):
    """The knowledge graph of one namespace, as the nine tools and their planning read it."""

    ns: str

    def element(self, key: Key) -> Any: ...
    def entity(self, name: str) -> Any: ...
    def entity_names(self) -> list[str]: ...
    def entity_dict(self, name: str) -> dict[str, Any]: ...
    def observations(self, name: str) -> list[str]: ...
    def visible_observations(self, name: str) -> list[tuple[Key, str]]: ...
    def live_observation_keys(self, name: str) -> list[Key]: ...
    def live_relation_keys(self, src: str, dst: str, rtype: str) -> list[Key]: ...
    def relation_keys_touching(self, names: Iterable[str]) -> list[Key]: ...
    def graph(self) -> dict[str, Any]: ...
    def search(self, query: str) -> dict[str, Any]: ...
    def open(self, names: Iterable[str]) -> dict[str, Any]: ...


def _order(el: Element) -> tuple[int, str, int]:
    return el.winner.order


class View:
    """The knowledge graph of one namespace of an in-memory fold (a :class:`KgReader`)."""

    def __init__(self, fold: Fold, ns: str) -> None:
        self.fold = fold
        self.ns = ns

    def element(self, key: Key) -> Element | None:
        return self.fold.elements.get(key)

    def _live(self, kind: str) -> list[tuple[Key, Element]]:
        found = [
            (k, el)
            for k, el in self.fold.elements.items()
            if k[0] == kind and k[1] == self.ns and not el.deleted
        ]
        found.sort(key=lambda pair: _order(pair[1]))
        return found

    def entity(self, name: str) -> Element | None:
        el = self.fold.elements.get(entity_key(self.ns, name))
        return None if el is None or el.deleted else el

    def entity_names(self) -> list[str]:
        return [k[2] for k, _ in self._live(ENTITY)]

    def visible_observations(self, name: str) -> list[tuple[Key, str]]:
        ent = self.entity(name)
        if ent is None:
            return []
        after = (ent.winner.val or {}).get("after", 0)
        return [
            (k, obs_text(k, el.winner))
            for k, el in self._live(OBS)
            if k[2] == name and el.winner.hlc > after
        ]

    def observations(self, name: str) -> list[str]:
        return [text for _, text in self.visible_observations(name)]

    def live_observation_keys(self, name: str) -> list[Key]:
        return [k for k, _ in self._live(OBS) if k[2] == name]

    def entity_dict(self, name: str) -> dict[str, Any]:
        ent = self.entity(name)
        assert ent is not None and ent.winner.val is not None
        return {
            "name": name,
            "entityType": ent.winner.val["type"],
            "observations": self.observations(name),
        }

    def live_relation_keys(self, src: str, dst: str, rtype: str) -> list[Key]:
        return [k for k, _ in self._live(REL) if k[2:5] == (src, dst, rtype)]

    def relation_keys_touching(self, names: Iterable[str]) -> list[Key]:
        wanted = set(names)
        return [k for k, _ in self._live(REL) if k[2] in wanted or k[3] in wanted]

    def graph(self) -> dict[str, Any]:
        return {
            "entities": [self.entity_dict(n) for n in self.entity_names()],
            "relations": [relation_dict(k) for k, _ in self._live(REL)],
        }

    def search(self, query: str) -> dict[str, Any]:
        entities = []
        for name in self.entity_names():
            e = self.entity_dict(name)
            if matches((e["name"], e["entityType"], *e["observations"]), query):
                entities.append(e)
        return self._with_relations(entities)

    def open(self, names: Iterable[str]) -> dict[str, Any]:
        wanted = set(names)
        entities = [self.entity_dict(n) for n in self.entity_names() if n in wanted]
        return self._with_relations(entities)

    def _with_relations(self, entities: list[dict[str, Any]]) -> dict[str, Any]:
        rels = self.relation_keys_touching(e["name"] for e in entities)
        return {"entities": entities, "relations": [relation_dict(k) for k in rels]}
