"""The search's pure pieces: the word test (a sorted-list bisection answers as a scan of the
document's words), the query's terms, and how per-term BM25 lists combine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.graph.search import query_terms, tokens
from noon.graph.stopwords import STOP_WORDS
from noon.store.readmodel.probe import WordProbe, distinct_words, holds
from noon.store.readmodel.scores import combine, coordinated, spread, weight_of
from noon.store.readmodel.search import TYPO_MIN, edits

WORD = st.text(alphabet="abcé1", min_size=1, max_size=5)


@given(st.lists(WORD, max_size=12), WORD)
def test_a_term_is_held_as_a_word_or_the_start_of_one(doc_words: list[str], term: str) -> None:
    doc = " ".join(doc_words)
    words = distinct_words(doc)
    scanned = any(w.startswith(term) for w in set(words))
    assert holds(words, doc.casefold(), term) == scanned


TEXT = st.text(alphabet="abAB cé_1-.'ßİﬁ記憶x\u00a0", max_size=40)


@given(TEXT, TEXT)
def test_the_duplicate_probe_holds_what_the_word_test_holds(doc: str, new: str) -> None:
    """The duplicate hint's one-pattern pass finds exactly the words :func:`holds` finds in
    the document cut into words (case, CJK, punctuation, underscores, casefold expansions)."""
    words = list(dict.fromkeys(tokens(new)))
    held = distinct_words(doc)
    expected = tuple(w for w in words if holds(held, doc.casefold(), w))
    assert WordProbe(words).held(doc) == expected


@given(TEXT, st.data())
def test_the_duplicate_probe_stops_early_only_below_its_bound(
    doc: str, data: st.DataObject
) -> None:
    """Asked for at least ``at_least`` words, the probe answers in full or, only when the
    document holds fewer, with nothing (new words partly the document's, bounds around the
    number it holds)."""
    shared = data.draw(st.lists(st.sampled_from(doc.split() or [""]), max_size=4))
    probe = WordProbe(list(dict.fromkeys(tokens(" ".join([*shared, data.draw(TEXT)])))))
    full = probe.held(doc)
    at_least = max(0, len(full) + data.draw(st.integers(-1, 1)))
    bounded = probe.held(doc, at_least)
    assert bounded == full or (bounded == () and len(full) < at_least)


TERM = st.sampled_from(["tea", "sync", "deploy", "when", "did", "the", "记忆", "green"])


@given(st.lists(TERM, max_size=10))
def test_query_terms_drop_stop_words_unless_nothing_else_is_left(words: list[str]) -> None:
    terms = query_terms(" ".join(words))
    assert len(terms) == len(set(terms))
    content = [w for w in dict.fromkeys(tokens(" ".join(words))) if w not in STOP_WORDS]
    assert terms == (content or list(dict.fromkeys(tokens(" ".join(words)))))


ROWS = st.dictionaries(st.integers(1, 30), st.floats(0.01, 50), max_size=12)


@given(st.lists(ROWS, min_size=1, max_size=5))
def test_combine_sums_shares_and_ranks_by_coordinated_score(
    per_term: list[dict[int, float]],
) -> None:
    lists = {f"t{i}": sorted(rows.items()) for i, rows in enumerate(per_term)}
    ranked = combine(lists)
    assert {r for r, _, _ in ranked} == {r for rows in per_term for r in rows}
    weights = [max(rows.values(), default=0.0) for rows in per_term]
    for row, score, held in ranked:
        shares = [rows[row] for rows in per_term if row in rows]
        assert held == len(shares)
        weighed = sum(w for w, rows in zip(weights, per_term, strict=True) if row in rows)
        assert score == pytest.approx(coordinated(sum(shares), weighed, sum(weights)))
        assert score <= sum(shares) * (1 + 1e-9)  # coordination never raises a score
    scores = [s for _, s, _ in ranked]
    assert scores == sorted(scores, reverse=True)


@given(st.floats(0.01, 50), st.integers(1, 8), st.integers(1, 8))
def test_holding_more_of_the_query_never_ranks_lower(score: float, held: int, more: int) -> None:
    terms = held + more
    assert coordinated(score, held + more, terms) >= coordinated(score, held, terms)


SCORED = st.dictionaries(st.integers(1, 30), st.floats(0.01, 50), min_size=1, max_size=12)
NEAR = st.dictionaries(st.integers(1, 30), st.lists(st.integers(1, 40), max_size=2), max_size=12)


@given(SCORED, NEAR, st.floats(0, 1))
def test_spread_only_adds_its_share_of_the_neighbours_scores(
    scores: dict[int, float], near: dict[int, list[int]], share: float
) -> None:
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    out = dict(spread(ranked, near, share))
    assert set(out) == set(scores)  # a re-ranking: no new hit
    for row, score in out.items():
        gained = sum(
            share * scores.get(r, 0.0) for r, ns in near.items() for o in ns if o == row != r
        )
        assert score == pytest.approx(scores[row] + gained)
    values = list(dict(spread(ranked, near, share)).values())
    assert values == sorted(values, reverse=True)


@given(SCORED)
def test_spread_without_neighbours_keeps_the_ranking(scores: dict[int, float]) -> None:
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    assert spread(ranked, {}, 0.25) == ranked


@given(st.floats(0.01, 5), st.floats(1.01, 10), st.integers(2, 6))
def test_a_hit_holding_the_rare_word_outranks_one_holding_the_common_ones(
    common: float, rarer: float, commons: int
) -> None:
    """Row 1 holds only the rarest word, row 2 every common one, each with that word's best
    share: however many common words row 2 holds, row 1 ranks first when its word alone weighs
    more than all of them (counting words instead, row 2 held more and ranked first)."""
    rare = common * commons * rarer
    lists = {"rare": [(1, rare)]} | {f"c{i}": [(2, common), (3, common)] for i in range(commons)}
    assert weight_of(lists["rare"]) > sum(weight_of(lists[f"c{i}"]) for i in range(commons))
    assert next(row for row, _, _ in combine(lists)) == 1


@given(st.text(alphabet="abcdefgh", min_size=TYPO_MIN, max_size=12))
def test_edits_drop_a_letter_or_swap_two_keep_the_first_and_are_bounded(word: str) -> None:
    variants = edits(word)
    assert word not in variants
    assert len(variants) <= 2 * len(word)
    for v in variants:
        assert v[0] == word[0] and len(v) >= TYPO_MIN
        if len(v) == len(word):  # two neighbours swapped
            diff = [i for i, (a, b) in enumerate(zip(v, word, strict=True)) if a != b]
            assert len(diff) == 2 and diff[1] == diff[0] + 1
        else:  # a letter dropped
            assert len(v) == len(word) - 1
            assert any(word[:i] + word[i + 1 :] == v for i in range(len(word)))
    if len(word) > TYPO_MIN:  # "fesetival" -> "festival"
        assert word[:3] + word[4:] in variants
    if word[2] != word[3]:  # "recieved" -> "received"
        assert word[:2] + word[3] + word[2] + word[4:] in variants
