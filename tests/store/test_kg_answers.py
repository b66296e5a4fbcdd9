"""read_graph's kept answer (noon.store.kg_answers): built once while the graph stands, patched
after a change, whoever made it (this process, another process of the machine, another machine's
shard), to exactly the graph a build shows; built again after the read model is replaced;
bounded; and each answer's text the rendering of its graph, every caller's objects its own."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noon.kg import plan
from noon.kg.plan import KGError
from noon.kg.text import pretty
from noon.names import shard_file
from noon.store import kg_answers
from noon.store.access import kg_mutate, kg_read
from noon.store.kg_answers import graph_answer, graph_text
from noon.store.readmodel.kg import Entity, Order, RelationId, SqlKg
from noon.store.store import Store
from tests.harness.stores import open_store


def _entity(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "thing", "observations": list(observations)}


def _create(store: Store, *entities: dict[str, Any], ns: str = "default") -> None:
    kg_mutate(store, ns, plan.create_entities, list(entities), "test")


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The namespaces whose whole graph was read from the read model, in order."""
    built: list[str] = []
    real = SqlKg.entries

    def counted(self: SqlKg) -> tuple[dict[str, Entity], dict[RelationId, Order]]:
        built.append(self.ns)
        return real(self)

    monkeypatch.setattr(SqlKg, "entries", counted)
    return built


def _fresh(store: Store, ns: str = "default") -> dict[str, Any]:
    graph: dict[str, Any] = kg_read(store, ns, lambda view: view.graph())
    return graph


def test_an_unchanged_graph_is_built_once(tmp_path: Path, builds: list[str]) -> None:
    store = open_store(tmp_path / "a")
    _create(store, _entity("Ann", "likes tea"))
    first = graph_answer(store, "default")
    again = graph_answer(store, "default")
    assert builds == ["default"], "the second read built the graph again"
    assert again == first and again[1] == {
        "entities": [_entity("Ann", "likes tea")],
        "relations": [],
    }
    assert again[1] is not first[1], "two callers share one answer's objects"
    assert graph_text(store, "default") == first[0] == pretty(first[1])
    assert builds == ["default"]


def test_a_write_of_another_process_is_shown(tmp_path: Path, builds: list[str]) -> None:
    d = tmp_path / "a"
    reader, other = open_store(d), open_store(d)  # two sessions of one machine: one read model
    _create(reader, _entity("Ann"))
    graph_answer(reader, "default")
    _create(other, _entity("Bob", "new"))
    text, graph = graph_answer(reader, "default")
    assert [e["name"] for e in graph["entities"]] == ["Ann", "Bob"]
    assert builds == ["default"], "the kept answer was built again, not patched"
    assert text == pretty(graph) and graph == _fresh(reader)


def test_another_machines_shard_is_shown(tmp_path: Path, builds: list[str]) -> None:
    here, there = open_store(tmp_path / "a", "a"), open_store(tmp_path / "b", "b")
    _create(here, _entity("Ann"))
    assert [e["name"] for e in graph_answer(here, "default")[1]["entities"]] == ["Ann"]
    _create(there, _entity("Bob"))
    # what noond does when the other machine's ops arrive: its shard grows in this directory
    shutil.copy(tmp_path / "b" / shard_file("b"), tmp_path / "a" / shard_file("b"))
    names = {e["name"] for e in graph_answer(here, "default")[1]["entities"]}
    assert names == {"Ann", "Bob"}


def test_a_rebuilt_read_model_is_read_again(tmp_path: Path, builds: list[str]) -> None:
    store = open_store(tmp_path / "a")
    _create(store, _entity("Ann"))
    graph_answer(store, "default")
    store.rebuild()  # a new file, whose generations count again from the start
    graph_answer(store, "default")
    assert builds == ["default", "default"]


def test_each_namespace_has_its_own_answer(tmp_path: Path, builds: list[str]) -> None:
    store = open_store(tmp_path / "a")
    _create(store, _entity("Ann"))
    _create(store, _entity("Bob"), ns="work")
    assert graph_answer(store, "work")[1]["entities"] == [_entity("Bob")]
    assert graph_answer(store, "default")[1]["entities"] == [_entity("Ann")]
    _create(store, _entity("Cat"), ns="work")  # moves the generation: both are patched
    assert graph_answer(store, "default")[1]["entities"] == [_entity("Ann")]
    assert graph_answer(store, "work")[1]["entities"] == [_entity("Bob"), _entity("Cat")]
    assert builds == ["work", "default"]


def test_what_is_kept_stays_under_its_bound(
    tmp_path: Path, builds: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path / "a")
    _create(store, _entity("Ann"), ns="one")
    _create(store, _entity("Bob"), ns="two")
    _create(store, _entity("Cat" * 100), ns="big")
    small = len(pretty(_fresh(store, "one")))
    assert len(pretty(_fresh(store, "two"))) == small
    monkeypatch.setattr(kg_answers, "KEEP_CHARS", 2 * small + 1)
    builds.clear()
    for ns in ("one", "two", "one", "big", "big", "two", "one"):
        graph_text(store, ns)
    # "one" and "two" fit together; "big" never fits; reading "two" after "one" was read last
    # keeps both; "big" drops neither (it is not kept), so nothing is read twice but "big"
    assert builds == ["one", "two", "big", "big"]
    monkeypatch.setattr(kg_answers, "KEEP_CHARS", small)
    _create(store, _entity("Dan"), ns="elsewhere")  # a new generation: what is kept is patched
    builds.clear()
    for ns in ("one", "two", "one"):
        graph_text(store, ns)
    assert builds == ["two", "one"], "only one of the two fits: the older one goes"


NAMES = st.sampled_from(["Ann", "Bob", "Cat"])
TEXTS = st.sampled_from(["likes tea", "runs", "x"])
CHANGES = st.one_of(
    st.tuples(st.just(plan.create_entities), st.lists(NAMES.map(_entity), max_size=2)),
    st.tuples(
        st.just(plan.add_observations),
        st.lists(
            st.builds(lambda n, t: {"entityName": n, "contents": [t]}, NAMES, TEXTS), max_size=2
        ),
    ),
    st.tuples(st.just(plan.delete_entities), st.lists(NAMES, max_size=2)),
    st.tuples(
        st.just(plan.delete_observations),
        st.lists(
            st.builds(lambda n, t: {"entityName": n, "observations": [t]}, NAMES, TEXTS),
            max_size=2,
        ),
    ),
    *(
        st.tuples(
            st.just(change),
            st.lists(
                st.builds(lambda a, b: {"from": a, "to": b, "relationType": "knows"}, NAMES, NAMES),
                max_size=2,
            ),
        )
        for change in (plan.create_relations, plan.delete_relations)
    ),
)
WRITERS = st.sampled_from(["reader", "other process", "other machine"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(WRITERS, CHANGES, st.booleans()), min_size=1, max_size=12))
def test_a_patched_answer_is_the_graph_a_build_shows(
    steps: list[tuple[str, tuple[Any, list[Any]], bool]],
) -> None:
    """Changes of every knowledge-graph tool, written by this process, another process of the
    machine or another machine (whose ops may come earlier in write order than those kept), with
    reads between some of them: every answer is the graph built from the read model."""
    with tempfile.TemporaryDirectory() as tmp:
        d, elsewhere = Path(tmp) / "a", Path(tmp) / "b"
        reader, other, machine = open_store(d), open_store(d), open_store(elsewhere, "b")
        writers = {"reader": reader, "other process": other, "other machine": machine}
        try:
            for who, (change, arg), read in steps:
                with contextlib.suppress(KGError):
                    kg_mutate(writers[who], "default", change, arg, "test")
                if who == "other machine" and (elsewhere / shard_file("b")).exists():
                    shutil.copy(elsewhere / shard_file("b"), d / shard_file("b"))
                if read:
                    text, graph = graph_answer(reader, "default")
                    assert graph == _fresh(reader) and text == pretty(graph)
            text, graph = graph_answer(reader, "default")
            assert graph == _fresh(reader) and text == pretty(graph)
        finally:
            for store in writers.values():
                store.close()
