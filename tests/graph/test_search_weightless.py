"""A query word held by more than half the memories weighs nothing in BM25 (FTS5 clamps its
IDF): once known, it is left out of the lookups when the query's other words bring enough
memories, the answer otherwise the same (the hits' matched words, so their snippets, included);
known across writes while the documents written since cannot have brought it under half, and
looked up again once they may have: after random writes, the answers are a fresh search's."""

from __future__ import annotations

import random
from functools import partial
from typing import Any

import pytest

from noon.mcp.uri_read import search as search_memory
from noon.store.access import GraphService
from noon.store.readmodel import search, weightless
from noon.store.store import Store
from tests.harness.texts import write_texts

FILLER = ["alder", "birch", "cedar", "elm", "fir", "hazel", "larch", "maple", "oak", "pine"]
MEMORIES = {
    # "kettle" in 9 of 12 memories; "lamp" in 4, each of its texts of another length (no ties)
    **{f"k{i}": f"The kettle {' '.join(FILLER[: i + 1])}." for i in range(5)},
    **{f"l{i}": f"The kettle and the lamp {' '.join(FILLER[: 2 * i + 1])}." for i in range(4)},
    "c0": "A cup of tea.",
    "c1": "The garden gate.",
    "c2": "Rain again today.",
}


def answer(svc: GraphService, query: str, limit: int = 10) -> Any:
    """search_memory's whole reply: the text (with each hit's snippet) and the results."""
    return svc.read(lambda s: search_memory(s, "default", query, None, limit))


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The match expression of every lookup of a word's memories, in order."""
    seen: list[str] = []
    ranked_by = search.Search._ranked

    def counted(self: search.Search, namespace: str, match: str) -> list[tuple[int, float]]:
        seen.append(match)
        return ranked_by(self, namespace, match)

    monkeypatch.setattr(search.Search, "_ranked", counted)
    return seen


def test_a_weightless_word_is_left_out_once_known_and_the_answer_stays_the_same(
    lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch, lookups: list[str]
) -> None:
    _, svc = lexical
    write_texts(svc, "default", MEMORIES)
    monkeypatch.setattr(search, "RANKED", 4)  # "lamp" alone brings as many
    # asked for as many: the memories only "kettle" holds would come after (a share of a
    # millionth), as they come after the first thousand at RANKED's own value
    first = answer(svc, "lamp kettle", 4)
    assert lookups == ['"lamp"', '"kettle"']  # learnt on the way
    lookups.clear()
    again = answer(svc, "kettle lamp", 4)
    assert lookups == ['"lamp"']
    assert [r["uri"] for r in again[1]["results"]] == [r["uri"] for r in first[1]["results"]]
    assert {r["uri"] for r in again[1]["results"]} == {f"core://l{i}" for i in range(4)}
    hits = svc.read(lambda s: s.search.search("default", "kettle lamp", 4, neighbours=True))
    assert [h.matched for h in hits.hits] == [("kettle", "lamp")] * 4  # what snippets centre on

    # the control: nothing known to weigh nothing, every word looked up and ranked
    monkeypatch.setattr(weightless.Weightless, "words", lambda self, conn, terms: set())
    lookups.clear()
    control = answer(svc, "kettle lamp", 4)
    assert lookups == ['"kettle"', '"lamp"']
    assert control == again


@pytest.fixture
def learnt(lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch) -> GraphService:
    """:data:`MEMORIES` written, ``RANKED`` 4 and "lamp kettle" asked once: "kettle" known to
    weigh nothing (9 of 12 memories hold it)."""
    _, svc = lexical
    write_texts(svc, "default", MEMORIES)
    monkeypatch.setattr(search, "RANKED", 4)
    answer(svc, "lamp kettle", 4)
    return svc


def test_an_unrelated_write_keeps_what_weighs_nothing(
    learnt: GraphService, monkeypatch: pytest.MonkeyPatch, lookups: list[str]
) -> None:
    svc = learnt
    write_texts(svc, "default", {"n0": "Rain again, and the gate."})  # "kettle": 9 of 13
    lookups.clear()
    answer(svc, "lamp kettle", 4)
    assert lookups == ['"lamp"']  # counted once (9 of 13: four writes more), not looked up
    write_texts(svc, "default", {"n1": "Rain."})
    lookups.clear()
    kept = answer(svc, "lamp kettle", 4)
    assert lookups == ['"lamp"']  # within the margin: not even counted
    monkeypatch.setattr(weightless.Weightless, "words", lambda self, conn, terms: set())
    assert answer(svc, "lamp kettle", 4) == kept


def test_a_write_forgets_what_weighs_nothing(learnt: GraphService, lookups: list[str]) -> None:
    svc = learnt
    write_texts(svc, "default", {f"n{i}": f"News {i}: rain again." for i in range(20)})
    lookups.clear()
    answer(svc, "lamp kettle")  # "kettle" is now in 9 of 32: it weighs something again
    assert lookups == ['"lamp"', '"kettle"']
    lookups.clear()
    found = answer(svc, "lamp kettle")
    assert lookups == ['"lamp"', '"kettle"']
    assert any(r["uri"].startswith("core://k") for r in found[1]["results"])


def test_a_weightless_word_still_fills_an_answer_the_other_words_leave_short(
    lexical: tuple[Store, GraphService], lookups: list[str]
) -> None:
    _, svc = lexical
    write_texts(svc, "default", MEMORIES)
    for _ in range(2):  # learnt by the first, the same for the second
        lookups.clear()
        uris = [r["uri"] for r in answer(svc, "lamp kettle")[1]["results"]]
        assert lookups == ['"lamp"', '"kettle"']  # "lamp" brings 4, fewer than RANKED
        assert sorted(uris[:4]) == [f"core://l{i}" for i in range(4)]
        assert sorted(uris[4:]) == [f"core://k{i}" for i in range(5)]


WORDS = ["kettle", "lamp", "rain", "gate", "tea"]


def found_by(svc: GraphService, query: str, fresh: bool) -> search.Found:
    """The store's search (which remembers), or one made now (which knows nothing yet)."""
    searcher = search.Search(svc.store.model) if fresh else svc.search
    return searcher.search("default", query, 5, neighbours=True)


@pytest.mark.parametrize("seed", range(3))
def test_after_random_writes_the_answers_are_a_fresh_searchs(
    lexical: tuple[Store, GraphService],
    monkeypatch: pytest.MonkeyPatch,
    lookups: list[str],
    seed: int,
) -> None:
    """Memories of a few words each held by about half of them (so words cross the line)
    created and rewritten between searches, in two namespaces: each answer equals that of a
    search that knows nothing yet, and knowing saved lookups after writes."""
    _, svc = lexical
    monkeypatch.setattr(search, "RANKED", 3)
    rnd = random.Random(seed)
    ids: dict[str, tuple[str, str]] = {}  # name -> (namespace, memory id)
    saved = 0

    def text() -> str:
        return "The " + " ".join(w for w in WORDS if rnd.random() < 0.55) + f" note {len(ids)}."

    for step in range(60):
        roll = rnd.random()
        if roll < 0.35 or not ids:
            ns, name = rnd.choice(["default", "default", "other"]), f"m{step}"
            ids[name] = (ns, write_texts(svc, ns, {name: text()})[name])
        elif roll < 0.6:
            name = rnd.choice(sorted(ids))
            ns, node = ids[name]
            write_texts(svc, ns, {name: text()}, update={name: node})
        else:
            query = " ".join(rnd.sample(WORDS, 2))
            lookups.clear()
            known = svc.read(partial(found_by, query=query, fresh=False))
            kept = len(lookups)
            fresh = svc.read(partial(found_by, query=query, fresh=True))
            assert known == fresh, (step, query)
            saved += len(lookups) - 2 * kept
    assert saved > 0
