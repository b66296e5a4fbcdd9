"""The knowledge graph as a person browses it: entities listed or found, and one entity with
its observations and relations (the nine tools of :mod:`noon.mcp.kg_tools` write it)."""

from __future__ import annotations

from dataclasses import dataclass

from noon.errors import NotFound
from noon.store.access import GraphService


@dataclass(frozen=True)
class EntityLine:
    name: str
    type: str
    observations: int
    first: str
    """Its first observation ("" for none)."""


@dataclass(frozen=True)
class Relation:
    source: str
    target: str
    type: str


@dataclass(frozen=True)
class Entity:
    name: str
    type: str
    observations: list[str]
    relations: list[Relation]


def entities(
    svc: GraphService, ns: str, query: str | None, offset: int, limit: int
) -> tuple[int, list[EntityLine]]:
    """Entities in creation order, or those ``search_nodes`` finds for ``query``
    (case-insensitive substring of name, type or an observation): how many, and those
    ``offset`` to ``offset + limit``."""

    def fn(s: GraphService) -> tuple[int, list[EntityLine]]:
        kg = s.store.kg(ns)
        if query:
            found = kg.search(query)["entities"]
            total, shown = len(found), found[offset : offset + limit]
        else:
            names = kg.entity_names()
            total, shown = len(names), [kg.entity_dict(n) for n in names[offset : offset + limit]]
        lines = [
            EntityLine(
                e["name"],
                e["entityType"],
                len(e["observations"]),
                e["observations"][0] if e["observations"] else "",
            )
            for e in shown
        ]
        return total, lines

    return svc.read(fn)


def entity(svc: GraphService, ns: str, name: str) -> Entity:
    """One entity; refused (:class:`~noon.errors.NotFound`) when there is none by that name."""

    def fn(s: GraphService) -> Entity:
        kg = s.store.kg(ns)
        if kg.entity(name) is None:
            raise NotFound(f"No entity named {name[:200]!r}.")
        e = kg.entity_dict(name)
        rels = [Relation(k[2], k[3], k[4]) for k in kg.relation_keys_touching([name])]
        return Entity(name, e["entityType"], list(e["observations"]), rels)

    return svc.read(fn)
