"""The search's word test: a sorted-list bisection answers as a scan of the document's words."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from noon.store.readmodel.search import _holds, _words

WORD = st.text(alphabet="abcé1", min_size=1, max_size=5)


@given(st.lists(WORD, max_size=12), WORD)
def test_a_term_is_held_as_a_word_or_the_start_of_one(doc_words: list[str], term: str) -> None:
    doc = " ".join(doc_words)
    words = _words(doc)
    scanned = any(w.startswith(term) for w in set(words))
    assert _holds(words, doc.casefold(), term) == scanned
