"""Query words that weigh nothing: held by more than half the indexed memories, where FTS5's
``bm25()`` clamps the word's IDF to a millionth, so its share of any score is a millionth of
what a word that says something gives.

Finding that out costs the most of any word: ``bm25()`` walks the word's whole posting list
for its IDF on every call (2.5 ms for a word all of 100k memories hold, against 0.3 ms to read
its newest thousand rows; docs/recall.md, eighth round). :class:`Weightless` remembers such
words, so a later query leaves them out when its other words bring enough memories
(:meth:`noon.store.readmodel.search.Search.search`), and :func:`holding` still tells which of
the hits shown hold them. A write between two searches does not make it forget them: the fold
counts the memory documents it writes (:data:`.documents.WRITTEN`), and a word held by more
than half the documents stays so for as many writes as its margin (:meth:`Weightless.words`;
docs/recall.md, ninth round).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable

from noon.store.readmodel.documents import WRITTEN, quoted
from noon.store.readmodel.unfolded import read_meta

NOTHING = 1e-4
"""A word whose best BM25 share is below this weighs nothing. A clamped IDF (1e-6) times the
term-frequency factor over the four weighted columns is at most about 1.5e-5; a word held by
just under half the memories has an IDF near 0 as well, so where a word falls beside the line
changes its share of a score by about a ten-thousandth."""


class Weightless:
    """Words known to weigh nothing, each with what proves it still does (:meth:`words`)."""

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._known: dict[str, tuple[int, int | None]] = {}
        """Word → (:data:`.documents.WRITTEN` when it was last known to weigh nothing, its
        margin then: twice the memories holding it less all of them; None: not counted)."""

    def words(self, conn: sqlite3.Connection, terms: Iterable[str]) -> set[str]:
        """Those of ``terms`` known to weigh nothing in ``conn``'s index now. Call inside the
        read's transaction, so the index is the one the lookups see.

        A word weighs nothing while no document was written since it was found to, or while its
        IDF is clamped (held by at least half the documents: ``2n - N >= 0``). Writing or taking
        out one document changes ``2n - N`` by one at most, so a margin ``m`` counted at ``w``
        documents written holds the clamp up to ``w + m``: one count of the word's documents
        (a walk of its posting list, what looking it up costs) buys that many writes. A word
        the count finds held by fewer than half is forgotten (its IDF may be small yet not
        clamped: its lookup says whether it weighs nothing)."""
        if conn is not self._conn:
            self._conn, self._known = conn, {}
        known = set(terms) & self._known.keys()
        if not known:
            return set()
        written = documents_written(conn)
        out = set()
        for word in known:
            then, margin = self._known[word]
            moved = written - then
            if moved == 0 or (margin is not None and 0 < moved <= margin):
                out.add(word)
                continue
            del self._known[word]
            if moved > 0:
                now = _margin(conn, word)
                if now >= 0:
                    self._known[word] = (written, now)
                    out.add(word)
        return out

    def found(self, conn: sqlite3.Connection, words: Collection[str]) -> None:
        """``words`` were just found to weigh nothing (inside the same read as :meth:`words`)."""
        if words:
            written = documents_written(conn)
            for word in words:
                self._known.setdefault(word, (written, None))


def documents_written(conn: sqlite3.Connection) -> int:
    """The memory documents written or taken out since the read model's file was made."""
    return int(read_meta(conn, WRITTEN, 0))  # type: ignore[call-overload]


def _margin(conn: sqlite3.Connection, word: str) -> int:
    """Twice the indexed memories holding ``word`` less all of them: FTS5's ``bm25()`` clamps
    the word's IDF while this is not negative. ``memory_docs`` has a row for each document."""
    (held,) = conn.execute(
        "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", (quoted(word),)
    ).fetchone()
    (documents,) = conn.execute("SELECT count(*) FROM memory_docs").fetchone()
    return 2 * int(held) - int(documents)


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
