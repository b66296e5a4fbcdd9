"""The nine tools of the official memory server as pure functions of the folded state.

Mutations return the drafts to write (one all-or-nothing batch) and the result to show; reads
return the result. Semantics follow the official server exactly on one machine:
- create_entities / create_relations skip what already exists, but do not dedupe within one
  call (a relation listed twice is created twice, as two occurrences). Entities are the one
  exception: an entity's identity is its name, so a name listed twice in one call is created
  once (the first listing wins) - see docs/knowledge-graph.md.
- add_observations appends contents the entity does not hold yet (as it was before this item),
  keeps duplicates within an item, sees earlier items of the same call, and aborts the whole
  call on a missing entity.
- deletes remove every occurrence; delete_entities cascades to relations touching the names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from noon.core.elements import MAX_KEY_PART, entity_key, rel_key
from noon.core.ops import MAX_BATCH, Draft, Key
from noon.errors import Invalid
from noon.kg.graph import KgReader, obs_key, obs_value


class KGError(Invalid):
    """A call the official server refuses; the message is the official error text (or, for
    what only noon bounds, a message saying the bound)."""


MAX_CALL_ITEMS = 10_000
"""The most entities, relations, names, observations and contents one call may list: a call
is one batch written under the shard's lock, and a whole graph migrates with ``noon import``."""


def call_size(items: Sequence[Any]) -> int:
    """How many items a call's argument lists: its entries and the strings each one lists."""
    return len(items) + sum(
        len(v)
        for item in items
        if isinstance(item, dict)
        for v in item.values()
        if isinstance(v, list)
    )


def check_size(tool: str, items: Sequence[Any]) -> None:
    """Refuse, before anything is read or written, a call listing more than
    :data:`MAX_CALL_ITEMS` items (the official server has no bound: a deviation,
    docs/knowledge-graph.md)."""
    size = call_size(items)
    if size > MAX_CALL_ITEMS:
        raise KGError(
            f"{tool} lists {size} items (entries and the observations or names they list); one "
            f"call takes at most {MAX_CALL_ITEMS}. Nothing was written: split it into smaller "
            "calls, or import a whole graph with `noon import`."
        )


@dataclass
class Planned:
    drafts: list[Draft] = field(default_factory=list)
    result: Any = None


def _check_part(what: str, value: str) -> None:
    if len(value) > MAX_KEY_PART:
        raise KGError(f"{what} is longer than {MAX_KEY_PART} characters: {value[:40]!r}...")


class _Batch:
    """Drafts of one call, each key at most once (the last draft for a key wins)."""

    def __init__(self) -> None:
        self.drafts: dict[Key, Draft] = {}

    def put(self, key: Key, val: dict[str, Any]) -> None:
        self.drafts.pop(key, None)
        self.drafts[key] = Draft(key, val)

    def delete(self, key: Key) -> None:
        self.drafts.pop(key, None)
        self.drafts[key] = Draft(key, None)

    def list(self) -> list[Draft]:
        if len(self.drafts) > MAX_BATCH:  # a deletion cascading to that many observations
            raise KGError(
                f"This call would write {len(self.drafts)} operations; one change holds at "
                f"most {MAX_BATCH}. Nothing was written: delete in smaller calls."
            )
        return list(self.drafts.values())


def create_entities(view: KgReader, entities: Sequence[dict[str, Any]]) -> Planned:
    batch = _Batch()
    created: list[dict[str, Any]] = []
    taken: set[str] = set()
    held = view.entity_states(item["name"] for item in entities)
    for item in entities:
        name, etype, observations = item["name"], item["entityType"], item["observations"]
        if name in taken or (name in held and held[name] is None):
            continue
        _check_part("entity name", name)
        _check_part("entity type", etype)
        taken.add(name)
        val: dict[str, Any] = {"type": etype}
        tombstone = held.get(name)
        if tombstone is not None:
            val["after"] = tombstone  # start a fresh incarnation
        batch.put(entity_key(view.ns, name), val)
        slots: dict[str, int] = {}
        for text in observations:
            slot = slots[text] = slots.get(text, -1) + 1
            batch.put(obs_key(view.ns, name, text, slot), obs_value(text))
        created.append({"name": name, "entityType": etype, "observations": list(observations)})
    return Planned(batch.list(), created)


def create_relations(view: KgReader, relations: Sequence[dict[str, Any]]) -> Planned:
    batch = _Batch()
    created: list[dict[str, str]] = []
    slots: dict[tuple[str, str, str], int] = {}
    for item in relations:
        triple = (item["from"], item["to"], item["relationType"])
        if view.live_relation_keys(*triple):
            continue
        for what, part in zip(("from", "to", "relationType"), triple, strict=True):
            _check_part(what, part)
        slot = slots[triple] = slots.get(triple, -1) + 1
        batch.put(rel_key(view.ns, *triple, slot), {})
        created.append({"from": triple[0], "to": triple[1], "relationType": triple[2]})
    return Planned(batch.list(), created)


def add_observations(view: KgReader, items: Sequence[dict[str, Any]]) -> Planned:
    batch = _Batch()
    results: list[dict[str, Any]] = []
    current = view.observations_of(item["entityName"] for item in items)
    for item in items:
        name, contents = item["entityName"], item["contents"]
        held = current.get(name)
        if held is None:
            raise KGError(f"Entity with name {name} not found")
        before = set(held)
        added = [c for c in contents if c not in before]
        slots: dict[str, int] = {}
        for text in added:
            slot = slots[text] = slots.get(text, -1) + 1
            batch.put(obs_key(view.ns, name, text, slot), obs_value(text))
        held.extend(added)
        results.append({"entityName": name, "addedObservations": added})
    return Planned(batch.list(), results)


def delete_entities(view: KgReader, names: Iterable[str]) -> Planned:
    batch = _Batch()
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        if view.entity(name) is None:
            continue
        batch.delete(entity_key(view.ns, name))
        for k in view.live_observation_keys(name):
            batch.delete(k)
    for k in view.relation_keys_touching(wanted):
        batch.delete(k)
    return Planned(batch.list(), "Entities deleted successfully")


def delete_observations(view: KgReader, deletions: Sequence[dict[str, Any]]) -> Planned:
    batch = _Batch()
    for item in deletions:
        name = item["entityName"]
        if view.entity(name) is None:
            continue
        doomed = set(item["observations"])
        for k, text in view.visible_observations(name):
            if text in doomed:
                batch.delete(k)
    return Planned(batch.list(), "Observations deleted successfully")


def delete_relations(view: KgReader, relations: Sequence[dict[str, Any]]) -> Planned:
    batch = _Batch()
    for item in relations:
        for k in view.live_relation_keys(item["from"], item["to"], item["relationType"]):
            batch.delete(k)
    return Planned(batch.list(), "Relations deleted successfully")
