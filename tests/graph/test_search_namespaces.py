"""The words' lookups filter by namespace only where the store holds another one: alone in
its store, a namespace's search reads no memory row to filter, with the same answers."""

from __future__ import annotations

import pytest

from noon.mcp.uri_read import search as search_memory
from noon.store.access import GraphService
from noon.store.readmodel.search import Search
from noon.store.store import Store
from tests.harness.texts import write_texts

TEXTS = {f"m{i}": f"green tea number {i} " + "steeped " * i for i in range(6)}


def found(svc: GraphService, ns: str, query: str) -> list[tuple[str, float]]:
    _, data = svc.read(lambda s: search_memory(s, ns, query, None, 10))
    return [(r["memory_id"], r["score"]) for r in data["results"]]


def test_a_namespace_alone_is_searched_without_its_filter_and_answers_the_same(
    lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, svc = lexical
    ids = write_texts(svc, "a", TEXTS)
    with store.lock:
        assert store.search._alone("a") and not store.search._alone("b")
    unfiltered = found(svc, "a", "green steeped tea")
    assert {node for node, _ in unfiltered} == set(ids.values())
    monkeypatch.setattr(Search, "_alone", lambda self, namespace: False)  # the filter kept
    assert found(svc, "a", "green steeped tea") == unfiltered


def test_another_namespace_s_memories_are_never_found(
    lexical: tuple[Store, GraphService],
) -> None:
    store, svc = lexical
    mine = write_texts(svc, "a", {"x": "green tea in the morning"})
    theirs = write_texts(svc, "b", TEXTS)
    with store.lock:
        assert not store.search._alone("a") and not store.search._alone("b")
    assert [node for node, _ in found(svc, "a", "green tea")] == [mine["x"]]
    assert {node for node, _ in found(svc, "b", "green tea")} == set(theirs.values())
