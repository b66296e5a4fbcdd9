"""How the words' hits become one ranking, pure: per-word BM25 shares summed (the OR query's
BM25), weighed by the share of the query a memory holds (coordination, each word by how much it
tells), and a share of a strong hit's score given to the memories written beside it. The read
model's search (:mod:`.search`) looks the words up and calls these; the properties in
``tests/graph/test_search_props.py`` hold them."""

from __future__ import annotations

from operator import itemgetter

COORDINATION = 2.0
"""How much holding a larger share of the query counts: a score is multiplied by that share
to this power. The share is weighed (:func:`weight_of`): holding the rare words counts more
than holding the common ones."""


def coordinated(score: float, held: float, terms: float) -> float:
    """BM25 ``score`` (higher is better) scaled by the share of the query's words held
    (``held`` and ``terms`` may be weighted counts: :func:`combine`)."""
    if terms <= 0:
        return score
    return score * (held / terms) ** COORDINATION


def spread(
    ranked: list[tuple[int, float]], neighbours: dict[int, list[int]], share: float
) -> list[tuple[int, float]]:
    """``ranked`` (row, score) best first, each listed row's ``neighbours`` that are ranked too
    given ``share`` of its score: a re-ranking, never a new hit (a memory holding none of the
    query's words stays out). Best first; ties keep the earlier order, the rows that gained
    after the others."""
    scores = dict(ranked)
    gained: dict[int, float] = {}
    for row, near in neighbours.items():
        for other in near:
            if other != row and other in scores:
                gained[other] = gained.get(other, 0.0) + share * scores.get(row, 0.0)
    total = dict(scores)
    for row in gained:
        del total[row]  # re-inserted last: in a tie, a row that gained comes after the others
    total.update((row, scores[row] + more) for row, more in gained.items())
    return sorted(total.items(), key=itemgetter(1), reverse=True)


def weight_of(hits: list[tuple[int, float]]) -> float:
    """How much a query word tells: its best BM25 share (BM25 is the word's IDF times a
    bounded term-frequency factor, so a rare word weighs more than a common one, and a word
    no memory holds nothing)."""
    return max((score for _, score in hits), default=0.0)


def combine(lists: dict[str, list[tuple[int, float]]]) -> list[tuple[int, float, int]]:
    """Per-term hit lists (row, that term's BM25 share, higher is better) into one ranking:
    (row, score, how many terms it holds), best first, ties to the newest row. The sum of the
    shares is the BM25 of the OR query; coordination then weighs the share of the query held,
    each term by :func:`weight_of` (on LoCoMo's tuning conversations, a name every other
    memory holds counted as much as the one rare word before: docs/recall.md). A row held by
    one term costs dictionary copies only: the sums are made for the rows several hold."""
    total: dict[int, float] = {}
    held: dict[int, int] = {}
    weighed: dict[int, float] = {}
    weights = [weight_of(hits) for hits in lists.values()]
    for hits, weight in zip(lists.values(), weights, strict=True):
        mine = dict(hits)
        again = [(row, total[row], weighed[row], held[row]) for row in mine.keys() & total.keys()]
        total.update(mine)
        weighed.update(dict.fromkeys(mine, weight))
        held.update(dict.fromkeys(mine, 1))
        for row, score, weight_before, count in again:
            total[row] = score + mine[row]
            weighed[row] = weight_before + weight
            held[row] = count + 1
    whole = sum(weights)
    factor = {w: coordinated(1.0, w, whole) for w in set(weighed.values())}
    ranked = [(row, total[row] * factor[weighed[row]], held[row]) for row in total]
    ranked.sort(key=itemgetter(0), reverse=True)  # ties to the newest row,
    ranked.sort(key=itemgetter(1), reverse=True)  # in a stable sort by score
    return ranked
