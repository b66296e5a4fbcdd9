"""Memory vectors in the read model (table ``vectors``) and the in-process index over them.

A vector is derived from the memory text this machine folded, so it is never replicated: each
machine embeds its own copy (:mod:`.vectorizer`), and ``noon reindex`` throws them away with
the rest of the read model. A row remembers which version of the text it embedded (the
memory's winner ``w_node, w_seq``): an edited memory's vector is stale until embedded again,
and in the meantime the memory is found lexically only.

The index is a numpy matrix per namespace, kept by each process and brought up to date before
each query by reading only the rows written since (``stamp`` grows with every row). Stored as
float16 (1 KiB a memory), held as float32 for the product. Up to :data:`COARSE_FROM` memories a
flat scan: exact, no training, no extension to load. Beyond, the vectors are projected on their
:data:`COARSE_DIMS` main directions and grouped in lists around centroids (both fitted once on
the namespace's vectors); a query scans the projections of the lists nearest it, about
:data:`SCANNED` rows whatever the store's size, and only the :data:`SHORTLIST` best of those
(and the rows the caller names: the lexical hits) get their exact cosine. At 100k memories the
flat scan read 200 MB of floats a query, the projection alone 51 MB (more than this machine's
cache): see docs/recall.md for the measures and why not sqlite-vec.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from noon.store.readmodel.embedder import DIMENSIONS
from noon.store.readmodel.state import Database

COARSE_FROM = 8192
"""Vectors of a namespace from which the coarse scan is used (below, the flat scan costs less
than a millisecond or two)."""
COARSE_DIMS = 128
FIT_SAMPLE = 2048
"""Rows the directions are fitted on (spread evenly over the namespace): a fit costs about a
tenth of a second, once."""
ROUTE_DIMS = 32
"""The main directions the lists are formed on (the first of the :data:`COARSE_DIMS`: most of
the spread): placing 100k rows among 256 centroids costs a quarter of doing it on all 128."""
MAX_LISTS = 256
"""Lists a namespace's vectors are grouped in: the square root of its size, at most this."""
ROWS_A_LIST = 32
"""Rows of the sample the centroids are fitted on, per list."""
SCANNED = 8192
"""Rows a query's coarse scan reads at least (whole lists, the nearest first): a fixed cost,
where scanning every projection grew with the store."""
SHORTLIST = 512
"""Rows of the coarse scan whose exact cosine is computed: the nearest a query can find by
meaning are among them (the fusion takes 50) on vectors shaped as sentence embeddings are,
most of their spread in a few directions (tests/store/test_vector_index.py)."""


@dataclass(frozen=True)
class Pending:
    """A live memory whose text has no vector yet (or a stale one)."""

    row: int
    w_node: str
    w_seq: int
    text: str


def pending(conn: sqlite3.Connection, limit: int, below: int | None = None) -> list[Pending]:
    """Up to ``limit`` live memories lacking a vector of their current text, newest first (of
    those whose row is below ``below``, when given: where the last batch of a pass ended)."""
    rows = conn.execute(
        "SELECT m.id, m.w_node, m.w_seq, m.text FROM memories m "
        "LEFT JOIN vectors v ON v.id = m.id "
        "WHERE m.deleted = 0 AND (v.id IS NULL OR v.w_node IS NOT m.w_node "
        "OR v.w_seq IS NOT m.w_seq) AND m.id < ? ORDER BY m.id DESC LIMIT ?",
        (2**63 - 1 if below is None else below, limit),
    ).fetchall()
    return [Pending(int(r), str(n), int(s), t or "") for r, n, s, t in rows]


def put(conn: sqlite3.Connection, done: Iterable[tuple[Pending, Any]]) -> int:
    """Store each memory's vector (a float32 row) in one transaction, unless its text changed
    meanwhile (then it stays pending). Returns how many were stored."""
    import numpy as np

    stored = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        for item, vec in done:
            current = conn.execute(
                "SELECT 1 FROM memories WHERE id = ? AND w_node = ? AND w_seq = ? AND deleted = 0",
                (item.row, item.w_node, item.w_seq),
            ).fetchone()
            if current is None:
                continue
            blob = np.asarray(vec, dtype=np.float16).tobytes()
            conn.execute(
                "INSERT OR REPLACE INTO vectors (id, w_node, w_seq, vec) VALUES (?, ?, ?, ?)",
                (item.row, item.w_node, item.w_seq, blob),
            )
            stored += 1
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return stored


def prune(conn: sqlite3.Connection) -> None:
    """Drop the vectors of memories the read model no longer holds (one scan)."""
    conn.execute("DELETE FROM vectors WHERE id NOT IN (SELECT id FROM memories)")


def counts(conn: sqlite3.Connection) -> tuple[int, int]:
    """(live memories, of which embedded with their current text)."""
    live, done = conn.execute(
        "SELECT count(*), count(v.id) FROM memories m LEFT JOIN vectors v ON v.id = m.id "
        "AND v.w_node IS m.w_node AND v.w_seq IS m.w_seq WHERE m.deleted = 0"
    ).fetchone()
    return int(live), int(done)


class _Space:
    """One namespace's vectors: memory ids and a float32 matrix, rows in step; past
    :data:`COARSE_FROM` rows, the lists of projected rows the coarse scan reads."""

    def __init__(self) -> None:
        import numpy as np

        self.stamp = 0
        self.rows: list[int] = []
        self.where: dict[int, int] = {}
        self._room = np.zeros((0, DIMENSIONS), dtype=np.float32)
        """The matrix's rows and room for a quarter more (untouched, so not resident): a batch
        of new vectors is written into it instead of copying every row each time
        (``np.vstack``: 100 MB at 50k rows, once per batch the worker commits while it embeds
        a backlog)."""
        self.matrix = self._room[:0]
        """The rows, a view of :attr:`_room`."""
        self.basis: Any = None
        """``(DIMENSIONS, COARSE_DIMS)``: the main directions, once fitted."""
        self.centroids: Any = None
        """``(lists, ROUTE_DIMS)``: unit centres of the lists, once fitted."""
        self.label: list[int] = []
        """Each row's list, rows in step."""
        self.members: list[Any] = []
        """Each list's rows (positions in the matrix)."""
        self.blocks: list[Any] = []
        """Each list's rows projected on the basis, in step with its members: a list is read
        as one contiguous block."""

    def merge(self, fresh: list[tuple[int, int, bytes]]) -> None:
        import numpy as np

        added: list[tuple[int, Any]] = []
        for stamp, row, blob in fresh:
            self.stamp = max(self.stamp, stamp)
            vec = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
            if vec.shape != (DIMENSIONS,):
                continue  # another model's row: never written by this version
            at = self.where.get(row)
            if at is None:
                self.where[row] = len(self.rows) + len(added)
                added.append((row, vec))
            else:
                self.matrix[at] = vec
                if self.basis is not None:
                    self._unfile(at)
                    self._file(np.asarray([at]))
        if added:
            first = len(self.rows)
            self.rows += [row for row, _ in added]
            if len(self.rows) > len(self._room):
                room = np.empty((len(self.rows) * 5 // 4, DIMENSIONS), dtype=np.float32)
                room[:first] = self.matrix
                self._room = room
            self._room[first : len(self.rows)] = np.stack([v for _, v in added])
            self.matrix = self._room[: len(self.rows)]
            if self.basis is not None:
                self.label += [0] * len(added)
                self._file(np.arange(first, len(self.rows)))
        if self.basis is None and len(self.rows) >= COARSE_FROM:
            self.fit()

    def _file(self, ats: Any) -> None:
        """Put the rows at positions ``ats`` in the list of their nearest centroid."""
        import numpy as np

        projected = self.matrix[ats] @ self.basis
        labels = (projected[:, :ROUTE_DIMS] @ self.centroids.T).argmax(axis=1)
        for k in np.unique(labels):
            mine = labels == k
            self.members[k] = np.concatenate([self.members[k], ats[mine]])
            self.blocks[k] = np.vstack([self.blocks[k], projected[mine]])
        for at, k in zip(ats.tolist(), labels.tolist(), strict=True):
            self.label[at] = k

    def _unfile(self, at: int) -> None:
        k = self.label[at]
        keep = self.members[k] != at
        self.members[k], self.blocks[k] = self.members[k][keep], self.blocks[k][keep]

    def fit(self) -> None:
        """The :data:`COARSE_DIMS` directions that keep most of the rows' dot products (the
        top eigenvectors of the Gram matrix of an evenly spread sample), the lists' centroids
        (on the first :data:`ROUTE_DIMS` of them) and every row filed in its list."""
        import numpy as np

        step = max(1, len(self.rows) // FIT_SAMPLE)
        sample = self.matrix[::step].astype(np.float64)
        _, vectors = np.linalg.eigh(sample.T @ sample)
        self.basis = np.ascontiguousarray(vectors[:, ::-1][:, :COARSE_DIMS], dtype=np.float32)
        lists = max(1, min(MAX_LISTS, int(len(self.rows) ** 0.5)))
        spread = max(1, len(self.rows) // (lists * ROWS_A_LIST))
        self.centroids = centroids(self.matrix[::spread] @ self.basis[:, :ROUTE_DIMS], lists)
        lists = len(self.centroids)
        self.label = [0] * len(self.rows)
        self.members = [np.zeros(0, dtype=np.intp) for _ in range(lists)]
        self.blocks = [np.zeros((0, COARSE_DIMS), dtype=np.float32) for _ in range(lists)]
        every = np.arange(len(self.rows))
        for start in range(0, len(every), 16384):  # bounded temporaries
            self._file(every[start : start + 16384])

    def cosines(self, query: Any, exact: Iterable[int]) -> Any:
        """Each row's cosine with ``query``: exact over a flat scan; with the coarse scan,
        exact for the :data:`SHORTLIST` best of the lists it reads and the ``exact`` rows
        (memory ids), -1 for the rest (never near enough to be found by meaning)."""
        import numpy as np

        if self.basis is None:
            return self.matrix @ query
        projected = query @ self.basis
        ats, approx, count = [], [], 0
        for k in np.argsort(-(self.centroids @ projected[:ROUTE_DIMS])).tolist():
            ats.append(self.members[k])
            approx.append(self.blocks[k] @ projected)
            count += len(self.members[k])
            if count >= SCANNED:
                break
        near, scores = np.concatenate(ats), np.concatenate(approx)
        if len(near) > SHORTLIST:
            near = near[np.argpartition(-scores, SHORTLIST - 1)[:SHORTLIST]]
        named = np.fromiter(
            (at for at in map(self.where.get, exact) if at is not None), dtype=np.intp
        )
        sims = np.full(len(self.rows), -1.0, dtype=np.float32)
        sims[near] = self.matrix[near] @ query
        sims[named] = self.matrix[named] @ query
        return sims


def centroids(sample: Any, lists: int, rounds: int = 8) -> Any:
    """``lists`` unit centres of ``sample``'s rows (spherical k-means: each row goes to the
    centre it has the largest dot product with), started from rows spread evenly over it."""
    import numpy as np

    def unit(m: Any) -> Any:
        return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)

    rows = unit(np.asarray(sample, dtype=np.float32))
    lists = min(lists, len(rows))
    centres = rows[np.linspace(0, len(rows) - 1, lists).astype(int)].copy()
    for _ in range(rounds):
        label = (rows @ centres.T).argmax(axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, label, rows)
        filled = np.bincount(label, minlength=lists) > 0
        centres[filled] = unit(sums[filled])
    return np.ascontiguousarray(centres, dtype=np.float32)


SINCE = (
    "SELECT v.stamp, v.id, v.vec FROM vectors v CROSS JOIN memories m ON m.id = v.id "
    "WHERE v.stamp > ? AND m.ns = ? ORDER BY v.stamp"
)
"""A namespace's vectors stored after a stamp, in stamp order: read from the vectors by their
stamps, each one's memory by its id (``CROSS JOIN`` keeps that order of the loops). Joined the
other way round, SQLite went through every memory of the namespace for the few vectors a
batch adds: 35 ms at 100k memories for 32 new vectors (0.1 to 0.4 ms now), paid by the first
search after each batch the worker commits while it embeds a backlog."""


class Index:
    """The vectors of each namespace this process searched, kept in memory."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: sqlite3.Connection | None = None
        self._spaces: dict[str, _Space] = {}

    def similarities(
        self, namespace: str, query: Any, exact: Iterable[int] = ()
    ) -> tuple[list[int], dict[int, int], Any]:
        """(memory ids, each one's position, their cosines with the L2-normalised ``query``),
        for every memory of the namespace with a vector (deleted ones too: callers filter as
        they filter lexical hits). In a large namespace only the nearest and the ``exact``
        rows' cosines are computed, the others -1 (:meth:`_Space.cosines`)."""
        space = self._current(namespace)
        return space.rows, space.where, space.cosines(query, exact)

    def load(self, namespace: str) -> None:
        """Bring the namespace's vectors up to date now (a query's first step, done while its
        vector is being computed)."""
        self._current(namespace)

    def _current(self, namespace: str) -> _Space:
        conn = self._db.conn
        top = conn.execute("SELECT coalesce(max(stamp), 0) FROM vectors").fetchone()[0]
        space = self._spaces.get(namespace)
        if conn is not self._conn or (space is not None and top < space.stamp):
            self._spaces.clear()  # a rebuilt read model: stamps start again
            self._conn, space = conn, None
        if space is None:
            space = self._spaces[namespace] = _Space()
        if top > space.stamp:
            space.merge(conn.execute(SINCE, (space.stamp, namespace)).fetchall())
            space.stamp = max(space.stamp, top)
        return space
