"""search_nodes on the read model, held to the official rule for any graph and query: the
entities whose name, type or an observation holds the lower-cased query, in write order, with
the relations from or to them (the in-memory fold's scan, ``View.search``). Each of the read
model's three ways is taken: the trigram index's phrase (three characters or more), ``instr``
on every document (shorter), and the test in Python (a query holding NUL or the separator);
the texts mix cases whose lower-casing changes their length or depends on their neighbours."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from operator import methodcaller
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noon.kg import plan
from noon.store.access import kg_mutate, kg_read
from tests.harness.kg_view import View
from tests.harness.mcp import make_store
from tests.harness.oracle import fold_of_dir

# Σ lower-cases to σ or ς by its neighbours, İ to two characters, ß stays; a query holding \x1f
# (the documents' separator) or NUL takes the Python test; quotes reach the phrase's quoting.
# Stored texts hold NUL too: the trigram index reads a document only up to its first NUL, so the
# documents write it as the separator (a word after one was not found before).
PARTS = [
    "ab",
    "Ab",
    "ba",
    "σΣ",
    "Σ",
    "ς",
    "İ",
    "i\u0307",
    "ß",
    "é",
    "\x1f",
    "\x00",
    '"',
    "'",
    " ",
    "😀",
    "1",
]
TEXT = st.lists(st.sampled_from(PARTS), max_size=4).map("".join)
"""Few parts, so that texts share pieces longer than a trigram (and differ past them)."""
QUERY = TEXT
NAME = st.text(alphabet="aAbΣİ1\x00\x01", min_size=1, max_size=3)
"""Names holding NUL and \x01 (and so \x01a, \x01b) reach the escapes of the names' set the
observations' and relations' statements are given (``noon.store.readmodel.name_sets``)."""
CASES: list[Callable[[str], str]] = [str, str.upper, str.swapcase]
ENTITY = st.fixed_dictionaries(
    {"name": NAME, "entityType": TEXT, "observations": st.lists(TEXT, max_size=3)}
)
CALL = st.one_of(
    st.tuples(st.just(plan.create_entities), st.lists(ENTITY, max_size=3)),
    st.tuples(st.just(plan.delete_entities), st.lists(NAME, max_size=2)),
    st.tuples(
        st.just(plan.add_observations),
        st.lists(
            st.fixed_dictionaries({"entityName": NAME, "contents": st.lists(TEXT, max_size=2)}),
            max_size=2,
        ),
    ),
    st.tuples(
        st.just(plan.delete_observations),
        st.lists(
            st.fixed_dictionaries({"entityName": NAME, "observations": st.lists(TEXT, max_size=2)}),
            max_size=2,
        ),
    ),
    st.tuples(
        st.just(plan.create_relations),
        st.lists(
            st.fixed_dictionaries(
                {"from": NAME, "to": NAME, "relationType": st.sampled_from(["r", "Σ"])}
            ),
            max_size=3,
        ),
    ),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(calls=st.lists(CALL, max_size=8), data=st.data())
def test_search_answers_as_the_official_rule_on_the_fold(
    tmp_path_factory: pytest.TempPathFactory, calls: list[Any], data: st.DataObject
) -> None:
    d: Path = tmp_path_factory.mktemp("search")
    store = make_store(d)
    try:
        for planner, arg in calls:
            # an unknown entity is refused and writes nothing, as the official server does
            with contextlib.suppress(plan.KGError):
                kg_mutate(store, "default", planner, arg, "test")
        fold = View(fold_of_dir(d), "default")
        texts = [
            t
            for e in fold.graph()["entities"]
            for t in (e["name"], e["entityType"], *e["observations"])
        ]
        # what the graph holds, whole or in pieces (a case changed), and anything at all
        pieces = st.sampled_from(texts or [""]).flatmap(
            lambda t: st.builds(
                lambda i, j, case: case(t[i:j]),
                st.integers(0, len(t)),
                st.integers(0, len(t)),
                st.sampled_from(CASES),
            )
        )
        whole = st.sampled_from(texts or [""]).map(str.upper)
        queries = data.draw(st.lists(st.one_of(pieces, whole, QUERY), min_size=1, max_size=8))
        for q in queries:
            assert kg_read(store, "default", methodcaller("search", q)) == fold.search(q), q
    finally:
        store.close()
