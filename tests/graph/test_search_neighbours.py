"""Neighbouring context in ``search_memory``: a hit written right after a strong hit, under the
same parent, ranks higher (an answer found through the question it answers); a memory written
next to it elsewhere in the graph is no neighbour, and one holding no query word stays out."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from noon.core.ops import Draft
from noon.graph import plan
from noon.graph.uri import parse
from noon.store.access import GraphService
from noon.store.access import service as service_of
from noon.store.readmodel import search
from noon.store.readmodel.graph import SqlGraph
from noon.store.store import Store
from tests.harness.texts import ANSWER_TWO_AFTER, ranked, write_texts, write_turns
from tests.harness.uri import open_store


def test_an_answer_ranks_up_through_the_question_written_before_it(
    lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, svc = lexical
    turns = [
        ("filler", "The boat needs a coat of varnish."),
        ("asked", "How long have you two been married?"),
        ("answer", "Five years already, since that long summer in Porto with everyone."),
        ("other", "Porto in summer."),
    ]
    write_turns(svc, "default", turns)
    query = "married in Porto"
    assert ranked(svc, query) == ["core://asked", "core://answer", "core://other"]
    monkeypatch.setattr(search, "SPREAD", ())  # the control: without it, BM25's order
    assert ranked(svc, query)[1:] == ["core://other", "core://answer"]


def test_a_memory_written_next_but_elsewhere_is_no_neighbour(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path, "n1")
    try:
        svc = service_of(store)
        ids = write_texts(svc, "default", {"here": "first"})
        ids |= write_texts(svc, "default", {"asked": "second"})

        def elsewhere(graph: SqlGraph) -> tuple[list[Draft], str]:
            drafts, node, _ = plan.create(
                graph, "default", parse("core://here"), "below", "third", 1, "When asked"
            )
            return drafts, node

        _, below = svc.write(elsewhere, client="test")
        with store.lock:
            conn = store.model.conn
            row = {node: r for r, node in conn.execute("SELECT id, node FROM memories").fetchall()}
            near = store.search.neighbours("default", [row[ids["asked"]]], reach=2)
        assert near == {row[ids["asked"]]: [[row[ids["here"]]], []]}
        assert all(row[below] not in ring for ring in near[row[ids["asked"]]])
    finally:
        store.close()


def test_an_answer_two_memories_after_the_question_ranks_up_less_than_one_next_to_it(
    lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word in between ("Really?") does not cut the answer off from its question; it gets
    the second share, and a memory three away none."""
    store, svc = lexical
    ids = write_turns(svc, "default", ANSWER_TWO_AFTER)
    with store.lock:
        conn = store.model.conn
        row = {node: r for r, node in conn.execute("SELECT id, node FROM memories").fetchall()}
        rows = {name: row[node] for name, node in ids.items()}
        rings = store.search.neighbours("default", [rows["asked"]], reach=3)[rows["asked"]]
    assert rings == [[rows["between"]], [rows["answer"]], [rows["later"]]]
    query = "married in Porto"
    assert ranked(svc, query)[:2] == ["core://asked", "core://answer"]
    monkeypatch.setattr(search, "SPREAD", search.SPREAD[:1])  # the control: one away only
    assert ranked(svc, query).index("core://answer") > 1


@pytest.mark.parametrize("late", [False, True], ids=["vector ready", "vector late"])
def test_a_hit_found_by_meaning_lifts_its_neighbours_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late: bool
) -> None:
    """The neighbours' share is taken after the fusion with meaning: a memory holding none of
    the query's words but close to it in meaning (the question, in other words) lifts the
    lexical hit written after it (the answer) above an equal hit elsewhere. Similarities are
    set by hand here (the model's own are tested in tests/store/test_semantic_search.py).
    ``late``: the query's vector is still being computed when the words are ranked, so the
    lexical hits' neighbours are read while waiting and the meaning's hit's after: the same
    ranking."""
    np = pytest.importorskip("numpy")
    store, _ = open_store(tmp_path, "n1")
    try:
        svc = service_of(store)
        turns = [
            ("asked", "How long have you two been together?"),
            ("answer", "Five years of marriage now."),
            ("filler", "The boat needs a coat of varnish."),
            ("elsewhere", "Five years of marriage now."),
        ]
        ids = write_turns(svc, "default", turns)
        with store.lock:
            conn = store.model.conn
            row = {node: r for r, node in conn.execute("SELECT id, node FROM memories")}
        rows = [row[ids[name]] for name in ("asked", "answer", "filler", "elsewhere")]
        sims = np.array([0.9, 0.0, 0.0, 0.0], dtype=np.float32)  # "asked" resembles the query

        steps: list[str] = []

        class Late(Future[object]):
            def done(self) -> bool:
                return False

            def result(self, timeout: float | None = None) -> object:
                steps.append("vector")
                return np.zeros(4, dtype=np.float32)

        class Model:
            def query_soon(self, text: str) -> Future[object]:
                if late:
                    return Late()
                done: Future[object] = Future()
                done.set_result(np.zeros(4, dtype=np.float32))
                return done

        read_neighbours = search.Search.neighbours

        def neighbours(self: search.Search, ns: str, rows: list[int], reach: int = 1) -> object:
            steps.append("neighbours")
            return read_neighbours(self, ns, rows, reach)

        monkeypatch.setattr(search.Search, "neighbours", neighbours)
        monkeypatch.setattr(search.Search, "_semantic_ready", staticmethod(lambda: True))
        monkeypatch.setattr(search, "MODEL", Model())
        monkeypatch.setattr(
            store.search._index,
            "similarities",
            lambda namespace, query, exact: (rows, {r: i for i, r in enumerate(rows)}, sims),
        )
        query = "married for years"
        assert ranked(svc, query)[:2] == ["core://answer", "core://elsewhere"]
        assert steps[:2] == (["neighbours", "vector"] if late else ["neighbours"])
        monkeypatch.setattr(search, "SPREAD", ())  # the control: equal hits, newest first
        assert ranked(svc, query)[:2] == ["core://elsewhere", "core://answer"]
    finally:
        store.close()


def test_the_neighbours_of_many_rows_read_at_once_are_each_rows_own(
    lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The neighbours are read in a few statements for all rows together (their times, the
    rows each side of each, the parents of all): the same rings as each row asked alone, also
    when the rows' reads are split over several statements, and with a row placed elsewhere
    among them."""
    store, svc = lexical
    ids = write_turns(svc, "default", [(f"t{i}", f"turn {i}") for i in range(9)])

    def elsewhere(graph: SqlGraph) -> tuple[list[Draft], str]:
        drafts, node, _ = plan.create(
            graph, "default", parse("core://t4"), "below", "placed under t4", 1, "When asked"
        )
        return drafts, node

    _, below = svc.write(elsewhere, client="test")
    ids |= write_turns(svc, "default", [("t9", "turn 9")])
    with store.lock:
        conn = store.model.conn
        row = {node: r for r, node in conn.execute("SELECT id, node FROM memories").fetchall()}
        rows = [row[node] for node in [*ids.values(), below]]
        alone = {r: store.search.neighbours("default", [r], reach=2)[r] for r in rows}
        monkeypatch.setattr(search, "SIDES", 3)  # several statements, a row's sides apart
        together = store.search.neighbours("default", rows, reach=2)
    assert together == alone
    assert alone[row[ids["t5"]]] == [
        [row[ids["t4"]], row[ids["t6"]]],
        [row[ids["t3"]], row[ids["t7"]]],
    ]
    assert alone[row[below]] == [[], []]  # written between t8 and t9, but under t4
