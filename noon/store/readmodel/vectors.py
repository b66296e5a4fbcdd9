"""Memory vectors in the read model (table ``vectors``) and the in-process index over them.

A vector is derived from the memory text this machine folded, so it is never replicated: each
machine embeds its own copy (:mod:`.vectorizer`), and ``noon reindex`` throws them away with
the rest of the read model. A row remembers which version of the text it embedded (the
memory's winner ``w_node, w_seq``): an edited memory's vector is stale until embedded again,
and in the meantime the memory is found lexically only.

The index is a numpy matrix per namespace, kept by each process and brought up to date before
each query by reading only the rows written since (``stamp`` grows with every row). Stored as
float16 (1 KiB a memory), held as float32 for the product. Up to :data:`COARSE_FROM` memories a
flat scan: exact, no training, no extension to load. Beyond, the scan is of a projection of
the vectors on their :data:`COARSE_DIMS` main directions (fitted once on the namespace's
vectors), a quarter of the bytes, and only the :data:`SHORTLIST` best of it (and the rows the
caller names: the lexical hits) get their exact cosine: at 100k memories the flat scan read
200 MB of floats a query (see docs/recall.md for the measure and why not sqlite-vec).
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


def pending(conn: sqlite3.Connection, limit: int) -> list[Pending]:
    """Up to ``limit`` live memories lacking a vector of their current text, newest first."""
    rows = conn.execute(
        "SELECT m.id, m.w_node, m.w_seq, m.text FROM memories m "
        "LEFT JOIN vectors v ON v.id = m.id "
        "WHERE m.deleted = 0 AND (v.id IS NULL OR v.w_node IS NOT m.w_node "
        "OR v.w_seq IS NOT m.w_seq) ORDER BY m.id DESC LIMIT ?",
        (limit,),
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
    """One namespace's vectors: memory ids and a float32 matrix, rows in step."""

    def __init__(self) -> None:
        import numpy as np

        self.stamp = 0
        self.rows: list[int] = []
        self.where: dict[int, int] = {}
        self.matrix = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.basis: Any = None
        """``(DIMENSIONS, COARSE_DIMS)``: the main directions, once fitted."""
        self.coarse: Any = None
        """The matrix projected on them, rows in step."""

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
                    self.coarse[at] = vec @ self.basis
        if added:
            self.rows += [row for row, _ in added]
            fresh_rows = np.stack([v for _, v in added])
            self.matrix = np.vstack([self.matrix, fresh_rows])
            if self.basis is not None:
                self.coarse = np.vstack([self.coarse, fresh_rows @ self.basis])
        if self.basis is None and len(self.rows) >= COARSE_FROM:
            self.fit()

    def fit(self) -> None:
        """The :data:`COARSE_DIMS` directions that keep most of the rows' dot products (the
        top eigenvectors of the Gram matrix of an evenly spread sample), and the projection."""
        import numpy as np

        step = max(1, len(self.rows) // FIT_SAMPLE)
        sample = self.matrix[::step].astype(np.float64)
        _, vectors = np.linalg.eigh(sample.T @ sample)
        self.basis = np.ascontiguousarray(vectors[:, ::-1][:, :COARSE_DIMS], dtype=np.float32)
        self.coarse = self.matrix @ self.basis

    def cosines(self, query: Any, exact: Iterable[int]) -> Any:
        """Each row's cosine with ``query``: exact over a flat scan; with the coarse scan,
        exact for its :data:`SHORTLIST` best and the ``exact`` rows (memory ids), -1 for the
        rest (never near enough to be found by meaning)."""
        import numpy as np

        if self.basis is None:
            return self.matrix @ query
        approx = self.coarse @ (query @ self.basis)
        keep = min(SHORTLIST, len(approx))
        named = [at for at in (self.where.get(row) for row in exact) if at is not None]
        ats = np.union1d(np.argpartition(-approx, keep - 1)[:keep], np.asarray(named, dtype=int))
        sims = np.full(len(approx), -1.0, dtype=np.float32)
        sims[ats] = self.matrix[ats] @ query
        return sims


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
            space.merge(
                conn.execute(
                    "SELECT v.stamp, v.id, v.vec FROM vectors v JOIN memories m ON m.id = v.id "
                    "WHERE m.ns = ? AND v.stamp > ? ORDER BY v.stamp",
                    (namespace, space.stamp),
                ).fetchall()
            )
            space.stamp = max(space.stamp, top)
        return space
