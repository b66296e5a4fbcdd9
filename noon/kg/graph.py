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
(:class:`noon.store.readmodel.kg.SqlKg`), which the tools use, and the test kit's ``View`` over an
in-memory fold (``tests/harness/kg_view.py``), which the tests hold the read model to.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, Protocol

from noon.core import elements
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


def relation_shown(src: str, dst: str, rtype: str) -> dict[str, str]:
    """A relation as the official server shows it."""
    return {"from": src, "to": dst, "relationType": rtype}


def relation_dict(key: Key) -> dict[str, str]:
    return relation_shown(key[2], key[3], key[4])


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

    def entity(self, name: str) -> Any: ...
    def entity_states(self, names: Iterable[str]) -> dict[str, int | None]: ...
    def entity_names(self) -> list[str]: ...
    def entity_dict(self, name: str) -> dict[str, Any]: ...
    def observations_of(self, names: Iterable[str]) -> dict[str, list[str]]: ...
    def visible_observations(self, name: str) -> list[tuple[Key, str]]: ...
    def live_observation_keys(self, name: str) -> list[Key]: ...
    def live_relation_keys(self, src: str, dst: str, rtype: str) -> list[Key]: ...
    def relation_keys_touching(self, names: Iterable[str]) -> list[Key]: ...
    def graph(self) -> dict[str, Any]: ...
    def search(self, query: str) -> dict[str, Any]: ...
    def open(self, names: Iterable[str]) -> dict[str, Any]: ...
