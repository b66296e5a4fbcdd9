"""The knowledge graph of an in-memory fold, as the official memory server shows it: the
reference the read model's :class:`noon.store.readmodel.kg.SqlKg` is held to. Written to be
obviously right, not fast: it scans the fold."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from noon.core.elements import ENTITY, OBS, REL, entity_key
from noon.core.fold import Element
from noon.core.ops import Key
from noon.kg.graph import matches, obs_text, relation_dict
from tests.harness.fold import Fold


def _order(el: Element) -> tuple[int, str, int]:
    return el.winner.order


class View:
    """The knowledge graph of one namespace of an in-memory fold (a :class:`KgReader`)."""

    def __init__(self, fold: Fold, ns: str) -> None:
        self.fold = fold
        self.ns = ns

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

    def entity_states(self, names: Iterable[str]) -> dict[str, int | None]:
        states: dict[str, int | None] = {}
        for name in names:
            el = self.fold.elements.get(entity_key(self.ns, name))
            if el is not None:
                states[name] = el.winner.hlc if el.deleted else None
        return states

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

    def observations_of(self, names: Iterable[str]) -> dict[str, list[str]]:
        return {n: self.observations(n) for n in names if self.entity(n) is not None}

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
