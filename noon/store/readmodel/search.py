"""Ranked search over the memories of a namespace: SQLite FTS5 with BM25 over four weighted
columns (text 1, URI words 2, disclosures 1.5, keywords 2).

A query is cut into words as :func:`noon.graph.search.tokens` cuts it (CJK runs into bigrams,
searched as phrases of characters, which is how the documents were split). Memories holding every
word rank first; if that leaves room, memories holding any word, or a word starting with one,
follow. ``accept`` filters hits (reachable, in a domain) as they stream in, best first.

Each pass ranks at most :data:`RANKED` memories: when more hold the words, the ones this machine
indexed last (the newest memories). BM25 over every memory holding a common word costs the size
of the store (about 1.5 s a call at 500k memories); with the bound it costs that many scores.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from noon.graph.search import tokens
from noon.store.readmodel.documents import CJK, segment
from noon.store.readmodel.state import Database

WEIGHTS = "1.0, 2.0, 1.5, 2.0"
MAX_TERMS = 64
RANKED = 1000
"""Memories scored per pass at most (see the module docstring)."""
PROBE_WORDS = 6
"""Words of a new memory looked up to find others like it: its longest (long words are rarer)."""
PROBE_CANDIDATES = 200
"""Memories holding one of them that are compared, the newest first: the cost of the check has
this bound, whatever the size of the store."""


@dataclass(frozen=True)
class Hit:
    node: str
    score: float
    matched: tuple[str, ...]
    """The query words the memory holds (whole or as the start of one of its words)."""


def _quoted(term: str) -> str:
    return '"' + segment(term).strip().replace('"', '""') + '"'


def _words(doc: str) -> list[str]:
    """A document's distinct words, sorted: :func:`_holds` finds a prefix by bisection."""
    return sorted(set(tokens(doc)))


def _holds(words: list[str], flat: str, term: str) -> bool:
    """True when the document (its sorted words, its casefolded text) holds ``term`` as a word
    or the start of one (CJK: as a run of characters)."""
    if CJK.search(term):
        return term in flat or term in flat.replace(" ", "")
    i = bisect_left(words, term)
    return i < len(words) and words[i].startswith(term)


class Search:
    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def conn(self) -> sqlite3.Connection:
        return self._db.conn

    def search(
        self,
        namespace: str,
        query: str,
        limit: int = 10,
        accept: Callable[[str], bool] | None = None,
    ) -> list[Hit]:
        """The best ``limit`` memories for ``query`` among those ``accept`` lets through."""
        terms = list(dict.fromkeys(tokens(query)))[:MAX_TERMS]
        if not terms or limit <= 0:
            return []
        every = " AND ".join(_quoted(t) for t in terms)
        some = " OR ".join(f"{_quoted(t)}*" for t in terms)
        hits: list[Hit] = []
        seen: set[str] = set()
        for expression in (every, some) if len(terms) > 1 else (some,):
            for node, score, doc in self._ranked(namespace, expression):
                if node in seen:
                    continue
                seen.add(node)
                if accept is not None and not accept(node):
                    continue
                flat = doc.casefold()
                words = _words(doc)
                found = tuple(t for t in terms if _holds(words, flat, t))
                hits.append(Hit(node, float(f"{score:.4g}"), found))
                if len(hits) >= limit:
                    return hits
        return hits

    def _ranked(self, namespace: str, expression: str) -> Iterator[tuple[str, float, str]]:
        """Best first: the node, its score and its document. Only the scores are sorted; a
        document is read when its hit is reached."""
        ranked = self.conn.execute(
            "SELECT m.node, -s.score, s.id FROM ("
            f"SELECT f.rowid AS id, bm25(memory_fts, {WEIGHTS}) AS score "
            "FROM memory_fts f JOIN memories m ON m.id = f.rowid "
            "WHERE memory_fts MATCH ? AND m.ns = ? ORDER BY f.rowid DESC LIMIT ?"
            ") s JOIN memories m ON m.id = s.id ORDER BY s.score, m.node",
            (expression, namespace, RANKED),
        ).fetchall()
        for node, score, rowid in ranked:
            doc = self.conn.execute(
                "SELECT m.text || ' ' || f.uri || ' ' || f.disclosure || ' ' || f.keywords "
                "FROM memory_fts f JOIN memories m ON m.id = f.rowid WHERE f.rowid = ?",
                (rowid,),
            ).fetchone()
            yield node, score, doc[0] if doc else ""

    def related(
        self,
        namespace: str,
        words: list[str],
        limit: int,
        accept: Callable[[str], bool] | None = None,
    ) -> list[Hit]:
        """Memories holding at least half of ``words`` (a new memory's), most shared first: the
        duplicate hint of ``create_memory``. The candidates hold one of the longest words and
        are at most :data:`PROBE_CANDIDATES`, the newest first, so a write never scans the
        store; in a store where even those words are everywhere, an older duplicate can go
        unnoticed (the hint is advice, never a refusal)."""
        probe = sorted(dict.fromkeys(words), key=len, reverse=True)[:PROBE_WORDS]
        if not probe:
            return []
        rows = self.conn.execute(
            "SELECT m.node, m.text || ' ' || f.uri || ' ' || f.disclosure || ' ' || f.keywords "
            "FROM memory_fts f JOIN memories m ON m.id = f.rowid "
            "WHERE memory_fts MATCH ? AND m.ns = ? AND m.deleted = 0 "
            "ORDER BY f.rowid DESC LIMIT ?",
            (" OR ".join(_quoted(w) for w in probe), namespace, PROBE_CANDIDATES),
        ).fetchall()
        scored = []
        for node, doc in rows:
            flat, held = doc.casefold(), _words(doc)
            found = tuple(w for w in words if _holds(held, flat, w))
            if len(found) * 2 >= len(words):
                scored.append(Hit(node, float(len(found)), found))
        scored.sort(key=lambda h: (-h.score, h.node))
        hits = []
        for hit in scored:  # the placement check last: it is the costly one
            if accept is None or accept(hit.node):
                hits.append(hit)
                if len(hits) >= limit:
                    break
        return hits
