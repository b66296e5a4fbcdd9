"""Query words that weigh nothing: held by more than half the indexed memories, where FTS5's
``bm25()`` clamps the word's IDF to a millionth, so its share of any score is a millionth of
what a word that says something gives.

Finding that out costs the most of any word: ``bm25()`` walks the word's whole posting list
for its IDF on every call (2.5 ms for a word all of 100k memories hold, against 0.3 ms to read
its newest thousand rows; docs/recall.md, eighth round). :class:`Weightless` remembers such
words for the read model's generation (any fold that changes a memory starts a new one), so a
later query of the generation leaves them out when its other words bring enough memories
(:meth:`noon.store.readmodel.search.Search.search`), and :func:`holding` still tells which of
the hits shown hold them.
"""

from __future__ import annotations

import sqlite3

from noon.store.readmodel.unfolded import read_meta

NOTHING = 1e-4
"""A word whose best BM25 share is below this weighs nothing. A clamped IDF (1e-6) times the
term-frequency factor over the four weighted columns is at most about 1.5e-5; a word held by
just under half the memories has an IDF near 0 as well, so where a word falls beside the line
changes its share of a score by about a ten-thousandth."""


class Weightless:
    """The words of this read model's generation known to weigh nothing."""

    def __init__(self) -> None:
        self._of: tuple[sqlite3.Connection | None, object] = (None, None)
        self._words: set[str] = set()

    def words(self, conn: sqlite3.Connection) -> set[str]:
        """The set for ``conn``'s current generation (empty when it changed since the last
        call): the caller adds the words it finds weigh nothing. Call inside the read's
        transaction, so the generation is the one the lookups see."""
        now = (conn, read_meta(conn, "generation"))
        if now[0] is not self._of[0] or now[1] != self._of[1]:
            self._of, self._words = now, set()
        return self._words


def holding(conn: sqlite3.Connection, match: str, rows: list[int]) -> set[int]:
    """Which of ``rows`` hold ``match`` (an FTS5 expression): one rowid seek a row in the
    word's posting list, no score."""
    if not rows:
        return set()
    marks = ", ".join("?" * len(rows))
    return {
        int(r)
        for (r,) in conn.execute(
            f"SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({marks})",
            (match, *rows),
        )
    }
