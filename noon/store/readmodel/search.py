"""Ranked search over the memories of a namespace: SQLite FTS5 with BM25 over four weighted
columns (text, URI words, disclosures, keywords), English words stemmed (Porter).

A query is cut into words as :func:`noon.graph.search.tokens` cuts it (CJK runs into bigrams,
searched as phrases of characters, which is how the documents were split), without the English
stop words it is asked with ("when did", "what is"; kept if nothing else is left). Any word
finds a memory (OR); each word is looked up on its own and the BM25 shares summed, so a memory
holding more of the query's words ranks higher, and more so by coordination (the score times
the share of the query held, each word weighed by how rare it is: :mod:`.scores`). A word no
memory holds, of at least :data:`PREFIX_MIN` letters, finds the words it starts instead
("gre": "green") when they are at most :data:`PREFIX_TERMS` (counted in the index's
vocabulary): a short prefix never expands to the whole vocabulary; one that starts no word may
be a typo: when the query finds too few memories, it finds the words a letter shorter or with
two neighbouring letters swapped (:func:`edits`; the longest such word of a query).
``accept`` filters hits (reachable, in a domain) as they stream in, best first.

``neighbours=True`` (``search_memory`` and the web page's search) adds to the hits written just
before and after each of the :data:`NEIGHBOURS` best hits, and to those two away (after the
fusion with meaning, when hybrid), under a parent of theirs, a share of that hit's score
(:data:`SPREAD`): an answer ranks up through the question it answers (on LoCoMo, docs/recall.md).
A memory holding none of the query's words is not added by it.

``hybrid=True`` (``search_memory``, ``recall``, the web page's search) also ranks by meaning
where the ``semantic`` extra is installed: the query's embedding against each memory's
(:mod:`.vectors`), fused with the lexical scores (:mod:`.hybrid`). Until the model is loaded
(the first such search starts loading it) and for memories not embedded yet, the ranking is
the lexical one.

Each word ranks at most :data:`RANKED` memories: when more hold it, the ones this machine
indexed last (the newest memories); a rare word still finds an old memory. BM25 over every
memory holding a common word costs the size of the store (about 1.5 s a call at 500k
memories); with the bound it costs that many scores a word, and a word that weighs nothing
(held by most memories) is not looked up while the others bring as many (:mod:`.weightless`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from noon.graph.search import cjk, query_terms
from noon.store.readmodel import hybrid as fusion
from noon.store.readmodel.apply import chunks
from noon.store.readmodel.documents import quoted
from noon.store.readmodel.embedder import MODEL, available
from noon.store.readmodel.probe import WordProbe
from noon.store.readmodel.running import SEARCHES
from noon.store.readmodel.scores import combine, spread, weight_of
from noon.store.readmodel.state import Database
from noon.store.readmodel.vectors import Index
from noon.store.readmodel.weightless import NOTHING, Weightless, holding

WEIGHTS = {"text": 1.0, "uri": 2.0, "disclosure": 1.5, "keywords": 2.0}
"""BM25 weight of each column of ``memory_fts``."""
MAX_TERMS = 64
RANKED = 1000
"""Memories scored per query word at most (see the module docstring); in a large namespace the
best this many lexical hits also get their exact cosine with the query (:mod:`.vectors`)."""
TYPO_MIN = 5
TYPO_MAX = 20
TYPO_WORDS = 1
"""Words of a query no memory holds, of :data:`TYPO_MIN` to :data:`TYPO_MAX` letters, that
are searched as their variants (:func:`edits`) when the query finds too few memories: the
longest such word only, a bound on a query's cost (one lookup of at most 38 words: about 2 ms
at 100k memories under load; three words cost 8, docs/recall.md)."""
PREFIX_MIN = 3
PREFIX_TERMS = 8
NEIGHBOURS = 20
"""The best hits whose neighbours (:meth:`Search.neighbours`) get a share of their score."""
SPREAD = (0.25, 0.2)
"""The share of its score a hit gives the hits written next to it, and to those two away:
written beside a strong hit, under the same parent, a memory is likely about the same thing
(an answer next to its question, or after a word in between) even when it holds few of the
query's words."""
SIDES = 100
"""Reads of a row's neighbours on one side joined in one statement (SQLite allows 500)."""
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


@dataclass(frozen=True)
class Found:
    hits: list[Hit]
    semantic: bool
    """Ranked by meaning too (hybrid); else by words only."""


def edits(word: str) -> set[str]:
    """The words one letter too many or two neighbouring letters swapped away from ``word``
    ("fesetival", "recieved"), keeping its first letter (rarely the one mistyped; without the
    rule "mother" found "other") and at least :data:`TYPO_MIN` letters: at most two a letter.
    A letter missing or replaced is not tried: that is 51 variants a letter, each a lookup, and
    trying them put a query's p50 at 100k memories from 1.4 to about 100 ms (docs/recall.md)."""
    out = {word[:i] + word[i + 1 :] for i in range(1, len(word))}
    out |= {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(1, len(word) - 1)}
    out.discard(word)
    return {w for w in out if len(w) >= TYPO_MIN}


class Search:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._index = Index(db)
        self._weightless = Weightless()

    @property
    def conn(self) -> sqlite3.Connection:
        return self._db.conn

    def search(
        self,
        namespace: str,
        query: str,
        limit: int = 10,
        accept: Callable[[str], bool] | None = None,
        *,
        hybrid: bool = False,
        neighbours: bool = False,
    ) -> Found:
        """The best ``limit`` memories for ``query`` among those ``accept`` lets through, and
        whether meaning ranked too; ``neighbours``: hits written next to the best hits rank
        higher (:func:`.scores.spread`). The vectorizer waits while it runs."""
        with SEARCHES.held():  # the vectorizer waits meanwhile (:mod:`.running`)
            terms = query_terms(query)[:MAX_TERMS]
            semantic = hybrid and bool(query.strip()) and self._semantic_ready()
            if (not terms and not semantic) or limit <= 0:
                return Found([], semantic)
            meaning = MODEL.query_soon(query) if semantic else None
            lists, left_out = self._lists(namespace, terms, limit)
            ranked = [(row, score) for row, score, _ in combine(lists)]
            rings: dict[int, list[list[int]]] = {}
            if meaning is not None:
                # While the model embeds the query (on its own thread), the work that does not
                # need the query's vector: the namespace's vectors brought up to date, and the
                # neighbours of the best lexical hits, which most often stay among the best.
                self._index.load(namespace)
                if neighbours and SPREAD and not meaning.done():
                    rings = self.neighbours(
                        namespace, [r for r, _ in ranked[:NEIGHBOURS]], len(SPREAD)
                    )
                rows, where, sims = self._index.similarities(
                    namespace, meaning.result(), [row for row, _ in ranked[:RANKED]]
                )
                ranked = fusion.fuse(ranked, rows, where, sims)
            if neighbours and SPREAD and ranked:
                # after the fusion: a hit found by meaning lifts its neighbours too
                top = [row for row, _ in ranked[:NEIGHBOURS]]
                missing = [row for row in top if row not in rings]
                rings.update(self.neighbours(namespace, missing, len(SPREAD)))
                rings = {row: rings[row] for row in top if row in rings}
                for away, share in enumerate(SPREAD):
                    ranked = spread(ranked, {row: near[away] for row, near in rings.items()}, share)
            hits = self._accepted(namespace, ranked, lists, left_out, terms, limit, accept)
            return Found(list(hits), semantic)

    @staticmethod
    def _semantic_ready() -> bool:
        """True when the model answers now; else starts loading it (this search is lexical)."""
        if not available():
            return False
        if not MODEL.ready:
            MODEL.load_in_background()
        return MODEL.ready

    def _lists(
        self, namespace: str, terms: list[str], limit: int
    ) -> tuple[dict[str, list[tuple[int, float]]], list[str]]:
        """Each term's hits (row, its BM25 share), a fragment's as a prefix. When they are
        fewer than ``limit`` memories, a word no memory holds is searched as its variants
        (:func:`edits`: a typo, "fesetival" finds "festival"): only then, as each variant
        costs a lookup.

        And the words left out: those known to weigh nothing (:mod:`.weightless`) while the
        other words bring :data:`RANKED` memories, which would rank before any only they bring."""
        idle = self._weightless.words(self.conn, terms)
        out = {t: self._ranked(namespace, quoted(t)) for t in terms if t not in idle}
        found = {t for t, hits in out.items() if hits and weight_of(hits) < NOTHING}
        self._weightless.found(self.conn, found)
        idle |= found
        left_out = [t for t in terms if t in idle]
        if len({row for t, hits in out.items() if t not in idle for row, _ in hits}) < RANKED:
            out.update((t, self._ranked(namespace, quoted(t))) for t in left_out if t not in out)
            left_out = []
        for t in left_out:
            out.pop(t, None)
        # only a word the namespace does not hold can be a fragment or a typo
        fragments, unknown = self._fragments([t for t in terms if t in out and not out[t]])
        for t in fragments:
            out[t] = self._ranked(namespace, quoted(t) + "*")
        typos = sorted(
            (
                t
                for t in terms
                if t in unknown and TYPO_MIN <= len(t) <= TYPO_MAX and t.isascii() and t.isalpha()
            ),
            key=len,
            reverse=True,
        )[:TYPO_WORDS]
        if typos and len({row for hits in out.values() for row, _ in hits}) < limit:
            for t in typos:
                out[t] = self._ranked(namespace, " OR ".join(quoted(v) for v in sorted(edits(t))))
        return out, left_out

    def _accepted(
        self,
        namespace: str,
        ranked: list[tuple[int, float]],
        lists: dict[str, list[tuple[int, float]]],
        left_out: list[str],
        terms: list[str],
        limit: int,
        accept: Callable[[str], bool] | None,
    ) -> Iterator[Hit]:
        """The best ``limit`` of ``ranked`` that ``accept`` lets through; their memories read
        ``limit`` rows a statement (most often the first statement is the only one), and which
        of them hold the words ``left_out`` of the ranking (what a hit says it matched)."""
        rows_of = {t: set(map(itemgetter(0), hits)) for t, hits in lists.items()}
        given = 0
        for start in range(0, len(ranked), limit):
            part = ranked[start : start + limit]
            nodes = self._column(namespace, "node", [row for row, _ in part])
            for t in left_out:
                rows_of[t] = holding(self.conn, quoted(t), list(nodes))
            for row, score in part:
                node = nodes.get(row)
                if node is None or (accept is not None and not accept(node)):
                    continue
                matched = tuple(t for t in terms if row in rows_of[t])
                yield Hit(node, float(f"{score:.4g}"), matched)
                given += 1
                if given >= limit:
                    return

    def neighbours(
        self, namespace: str, rows: list[int], reach: int = 1
    ) -> dict[int, list[list[int]]]:
        """Each row's neighbours, by how far: the live memories of the namespace written
        just before and just after it (by the time of their text's winning op), then those
        written before and after these, up to ``reach`` away, while they are placed under a
        parent of the row's. Three statements whatever the number of rows: the rows' times,
        the ``reach`` nearest each way of each (one indexed read each, in one statement), and
        the parents of all of them."""
        times = self._column(namespace, "w_hlc", rows)
        rows = [row for row in rows if times.get(row) is not None]
        if not rows:
            return {}
        side = (
            "SELECT * FROM (SELECT ?, ?, id FROM memories INDEXED BY memories_recent WHERE ns = ? "
            "AND deleted = 0 AND w_hlc {} ? ORDER BY w_hlc {} LIMIT ?)"
        )
        sides = [side.format("<", "DESC"), side.format(">", "ASC")]
        near: dict[tuple[int, int], list[int]] = {}
        for chunk in chunks([(row, way) for row in rows for way in (0, 1)], SIDES):
            found = self.conn.execute(
                " UNION ALL ".join(sides[way] for _, way in chunk),
                [v for row, way in chunk for v in (row, way, namespace, times[row], reach)],
            ).fetchall()
            for row, way, other in found:
                near.setdefault((row, way), []).append(other)
        parents = self._parents(namespace, [*rows, *(o for n in near.values() for o in n)])
        out: dict[int, list[list[int]]] = {}
        for row in rows:
            rings: list[list[int]] = [[] for _ in range(reach)]
            mine = parents.get(row, set())
            for way in (0, 1):
                for away, other in enumerate(near.get((row, way), [])):
                    if not mine & parents.get(other, set()):
                        break
                    rings[away].append(other)
            out[row] = rings
        return out

    def _column(self, namespace: str, column: str, rows: list[int]) -> dict[int, Any]:
        """``column`` of each row of ``rows`` held by the namespace, by row."""
        out: dict[int, Any] = {}
        for chunk in chunks(dict.fromkeys(rows)):
            marks = ", ".join("?" * len(chunk))
            out.update(
                self.conn.execute(
                    f"SELECT id, {column} FROM memories NOT INDEXED WHERE id IN ({marks}) "
                    "AND ns = ?",
                    [*chunk, namespace],
                ).fetchall()
            )
        return out

    def _parents(self, namespace: str, rows: list[int]) -> dict[int, set[str]]:
        """The parents each row is placed under (a row placed nowhere is absent). The rows by
        their ids first (else SQLite reads every memory or placement of the namespace)."""
        out: dict[int, set[str]] = {}
        for chunk in chunks(dict.fromkeys(rows)):
            marks = ", ".join("?" * len(chunk))
            for row, parent in self.conn.execute(
                "SELECT m.id, p.parent FROM memories m NOT INDEXED CROSS JOIN placements p "
                "INDEXED BY placements_by_child ON p.ns = m.ns AND p.child = m.node "
                f"WHERE m.id IN ({marks}) AND m.ns = ?",
                [*chunk, namespace],
            ):
                out.setdefault(row, set()).add(parent)
        return out

    def _fragments(self, terms: list[str]) -> tuple[set[str], set[str]]:
        """The terms no memory holds as a word, of :data:`PREFIX_MIN` letters or more: those
        that start at most :data:`PREFIX_TERMS` indexed words (fragments: "gre"; the vocabulary
        is ordered: one range read each), searched as prefixes, and those that start none
        (unknown: maybe a typo). Whole words are not prefixes: stemming finds their other
        forms, and their prefixes measured worse on LoCoMo; nor are fragments that start more
        words than that, which say too little to expand."""
        out = set()
        unknown = set()
        for term in terms:
            if len(term) < PREFIX_MIN or cjk().search(term) or not term.isalnum():
                continue
            if self.conn.execute(
                "SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT 1", (quoted(term),)
            ).fetchone():
                continue
            (starts,) = self.conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_vocab WHERE term > ? AND term < ? "
                "LIMIT ?)",
                (term, term + "\U0010ffff", PREFIX_TERMS + 1),
            ).fetchone()
            if 0 < starts <= PREFIX_TERMS:
                out.add(term)
            elif starts == 0:
                unknown.add(term)
        return out, unknown

    def _ranked(self, namespace: str, match: str) -> list[tuple[int, float]]:
        """The newest :data:`RANKED` memories of the namespace matching ``match`` (one term
        and its expansions), each with its BM25 (higher is better). The namespace's filter
        reads each hit's memory row (for a word a few percent of 100k memories hold, 1.2 ms
        without it, 3.2 ms with it: docs/recall.md); where every memory of the store is in the
        namespace it filters nothing and is left out."""
        weights = ", ".join(str(w) for w in WEIGHTS.values())
        if self._alone(namespace):
            rows = self.conn.execute(
                f"SELECT rowid, -bm25(memory_fts, {weights}) FROM memory_fts "
                "WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
                (match, RANKED),
            ).fetchall()
        else:
            rows = self.conn.execute(
                f"SELECT f.rowid, -bm25(memory_fts, {weights}) "
                "FROM memory_fts f JOIN memories m ON m.id = f.rowid "
                "WHERE memory_fts MATCH ? AND m.ns = ? ORDER BY f.rowid DESC LIMIT ?",
                (match, namespace, RANKED),
            ).fetchall()
        return rows  # (int, float) as SQLite gives them: a rowid and a real

    def _alone(self, namespace: str) -> bool:
        """True when the store holds no memory of another namespace (two index seeks)."""
        (other,) = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM memories WHERE ns < ?) "
            "OR EXISTS (SELECT 1 FROM memories WHERE ns > ?)",
            (namespace, namespace),
        ).fetchone()
        return not other

    def disclosures(self, namespace: str, terms: list[str], limit: int) -> list[tuple[int, float]]:
        """Rows whose disclosures hold any of ``terms``, best first by BM25 of that column,
        each term's :data:`RANKED` newest at most (what ``recall`` checks against a context)."""
        if not terms:
            return []
        lists = {
            t: self._ranked(namespace, "{disclosure} : " + quoted(t)) for t in terms[:MAX_TERMS]
        }
        return [(row, score) for row, score, _ in combine(lists)[:limit]]

    def shown(self, namespace: str, nodes: list[str]) -> dict[str, tuple[str, str, int]]:
        """The text shown of each live memory of ``nodes`` and the op that wrote it (its node
        and seq), as the fold projected them (a live memory's is its winner's: what
        :func:`~noon.graph.reader.live_text` gives), in one statement."""
        out: dict[str, tuple[str, str, int]] = {}
        for chunk in chunks(dict.fromkeys(nodes)):
            marks = ", ".join("?" * len(chunk))
            # "+deleted": read by (ns, node); SQLite chose the index by time, every live row
            for node, text, w_node, w_seq in self.conn.execute(
                "SELECT node, text, w_node, w_seq FROM memories "
                f"WHERE ns = ? AND node IN ({marks}) AND +deleted = 0",
                [namespace, *chunk],
            ):
                out[node] = (text, w_node, w_seq)
        return out

    def node_of(self, row: int) -> str | None:
        found = self.conn.execute("SELECT node FROM memories WHERE id = ?", (row,)).fetchone()
        return found[0] if found else None

    def related(
        self,
        namespace: str,
        words: list[str],
        limit: int,
        accept: Callable[[str], bool] | None = None,
        own: str | None = None,
        own_folded: bool = True,
    ) -> list[Hit]:
        """Memories holding at least half of ``words`` (a new memory's), most shared first: the
        duplicate hint of ``create_memory``. The candidates hold one of the longest words and
        are at most :data:`PROBE_CANDIDATES`, the newest first, so a write never scans the
        store; in a store where even those words are everywhere, an older duplicate can go
        unnoticed (the hint is advice, never a refusal). ``own`` (the new memory, which holds
        all its words and is the newest candidate) is passed over unscored: it is never a hit,
        and scoring it would compile the word pattern for nothing. ``own_folded=False``: the new
        memory is not in the index yet (the hint runs while it is fsync'd), so one candidate
        fewer is read, the ones it would have been read beside."""
        probe = sorted(dict.fromkeys(words), key=len, reverse=True)[:PROBE_WORDS]
        if not probe:
            return []
        rows = self.conn.execute(
            "SELECT m.node, m.text || ' ' || d.uri || ' ' || d.disclosure || ' ' || d.keywords "
            "FROM memory_fts f JOIN memories m ON m.id = f.rowid JOIN memory_docs d ON d.id = m.id "
            "WHERE memory_fts MATCH ? AND m.ns = ? AND m.deleted = 0 "
            "ORDER BY f.rowid DESC LIMIT ?",
            (" OR ".join(quoted(w) for w in probe), namespace, PROBE_CANDIDATES - (not own_folded)),
        ).fetchall()
        scored = []
        probe_words, half = WordProbe(words), (len(words) + 1) // 2
        for node, doc in rows:
            if node == own:
                continue
            found = probe_words.held(doc, half)
            if len(found) >= half:
                scored.append(Hit(node, float(len(found)), found))
        scored.sort(key=lambda h: (-h.score, h.node))
        hits = []
        for hit in scored:  # the placement check last: it is the costly one
            if accept is None or accept(hit.node):
                hits.append(hit)
                if len(hits) >= limit:
                    break
        return hits
