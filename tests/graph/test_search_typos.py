"""Typos in a query: when a query finds too few memories, a word no memory holds is searched as
the words a letter shorter or with two neighbours swapped, for the longest such word only,
so a hostile query (thousands of long made-up words) costs a bounded number of lookups."""

from __future__ import annotations

import time

import pytest

from noon.store.access import GraphService
from noon.store.readmodel import search
from noon.store.store import Store
from tests.harness.texts import ranked, write_texts

MEMORIES = {
    "festival": "We went to the pride festival together in June.",
    "education": "She wants to go back into education and study counseling.",
    "boat": "The boat needs a coat of varnish before the summer.",
    "mother": "Dinner with my mother on Sunday.",
    "other": "The other one was red.",
}


def test_a_misspelt_word_finds_the_word_meant(
    lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, svc = lexical
    write_texts(svc, "default", MEMORIES)
    assert ranked(svc, "fesetival") == ["core://festival"]  # a letter too many
    assert ranked(svc, "eduction plans") == []  # a letter missing: not tried (bounded)
    assert ranked(svc, "vranish") == ["core://boat"]  # two letters swapped
    # a known word is never expanded, and a variant keeps the first letter: "mothers"
    # (not held, "mother" is) does not find "other"
    assert ranked(svc, "mothers") == ["core://mother"]
    # tried only when the words found fewer memories than asked for
    assert ranked(svc, "fesetival varnish", limit=2) == ["core://festival", "core://boat"]
    assert ranked(svc, "fesetival varnish", limit=1) == ["core://boat"]
    monkeypatch.setattr(search, "TYPO_WORDS", 0)  # the control: without it, nothing
    assert ranked(svc, "fesetival") == []


def test_a_query_of_many_long_made_up_words_costs_a_bounded_number_of_lookups(
    lexical: tuple[Store, GraphService], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, svc = lexical
    write_texts(svc, "default", MEMORIES)
    made_up = " ".join(f"zq{chr(97 + i % 26)}x{'wvy' * 6}{i}k" for i in range(5000))
    hostile = "festival " + " ".join(
        "q" + "".join(chr(97 + (i * 7 + j) % 26) for j in range(19)) for i in range(2000)
    )
    looked_up: list[int] = []
    ranked_by = search.Search._ranked

    def counted(self: search.Search, namespace: str, match: str) -> list[tuple[int, float]]:
        looked_up.append(match.count(" OR ") + 1)
        return ranked_by(self, namespace, match)

    monkeypatch.setattr(search.Search, "_ranked", counted)
    for query in (made_up, hostile):
        looked_up.clear()
        started = time.monotonic()
        found = ranked(svc, query)
        took = time.monotonic() - started
        assert len(looked_up) <= search.MAX_TERMS  # one lookup a kept word at most
        expanded = [n for n in looked_up if n > 1]
        assert len(expanded) <= search.TYPO_WORDS
        assert all(n <= 2 * search.TYPO_MAX for n in expanded)
        assert took < 30  # a bound on cost, generous for a loaded machine, not a speed
    assert found[0] == "core://festival"  # the honest word is still served
