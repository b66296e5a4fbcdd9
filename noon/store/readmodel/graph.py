"""The URI graph read from the read model: a :class:`~noon.graph.reader.GraphReader` whose
every answer is a query, so a process holds only what it reads.

Within one read (:meth:`SqlGraph.reading`, which :class:`~noon.store.access.GraphService`
opens around every view and plan), the placements a view walks are cached; a view that scans a
whole namespace (``live_nodes``: the index, the diagnostic, orphans) reads that namespace's
placements in one query instead of node by node.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from noon.core.elements import CONTENT, EDGE, WRITTEN, content_key, edge_key, written_at
from noon.core.ops import Key
from noon.graph.reader import Placement, Walks
from noon.graph.uri import DEFAULT_DOMAIN, Uri, is_root, root, root_domain
from noon.store.readmodel.documents import by_parent
from noon.store.readmodel.rows import KEY, key_of
from noon.store.readmodel.schema import NUMBERED
from noon.store.readmodel.state import Database, StoredElement, load_element

_PLACEMENT = "parent, name, key_name, child, priority, disclosure"


class _Newest(NamedTuple):
    """A heap entry that pops the newest first."""

    key: tuple[int, int, str, int]
    node: str

    def __lt__(self, other: object) -> bool:
        return isinstance(other, _Newest) and self.key > other.key


class SqlGraph(Walks):
    def __init__(self, db: Database) -> None:
        self._db = db
        self._up: dict[tuple[str, str], list[Placement]] | None = None
        self._whole: set[str] = set()
        """Namespaces whose placements are all in the cache."""

    @property
    def conn(self) -> sqlite3.Connection:
        return self._db.conn

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One consistent read: a snapshot of the file, and a cache that lives as long."""
        outer = self._up is not None
        if not outer:
            self._up = {}
            self._whole = set()
            if not self.conn.in_transaction:
                self.conn.execute("BEGIN")
        try:
            yield
        finally:
            if not outer:
                self._up = None
                self._whole = set()
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    # -- elements --------------------------------------------------------------------------

    def element(self, key: Key) -> StoredElement | None:
        return load_element(self.conn, key)

    def content(self, namespace: str, node: str) -> StoredElement | None:
        return load_element(self.conn, content_key(namespace, node))

    def is_live(self, namespace: str, node: str) -> bool:
        row = self.conn.execute(
            "SELECT deleted FROM memories WHERE ns = ? AND node = ?", (namespace, node)
        ).fetchone()
        return row is not None and not row[0]

    # -- structure -------------------------------------------------------------------------

    def domains(self, namespace: str) -> list[str]:
        found = {
            root_domain(p)
            for (p,) in self.conn.execute(
                "SELECT DISTINCT parent FROM placements WHERE ns = ? AND parent LIKE '@%'",
                (namespace,),
            )
            if is_root(p)
        }
        return sorted(found | {DEFAULT_DOMAIN})

    def resolve(self, namespace: str, uri: Uri) -> tuple[str, Placement | None] | None:
        node = root(uri.domain)
        placement: Placement | None = None
        for seg in uri.path:
            row = self.conn.execute(
                f"SELECT {_PLACEMENT} FROM placements WHERE ns = ? AND parent = ? AND name = ?",
                (namespace, node, seg),
            ).fetchone()
            if row is None:
                return None
            placement = Placement(*row)
            node = placement.child
        return node, placement

    def children(self, namespace: str, node: str) -> list[Placement]:
        return [
            Placement(*row)
            for row in self.conn.execute(
                f"SELECT {_PLACEMENT} FROM placements WHERE ns = ? AND parent = ? "
                "ORDER BY priority, name",
                (namespace, node),
            )
        ]

    def highest_number(self, namespace: str, node: str) -> int:
        row = self.conn.execute(
            "SELECT key_name FROM placements INDEXED BY placements_numbered "
            f"WHERE ns = ? AND parent = ? AND {NUMBERED} "
            "ORDER BY length(key_name) DESC, key_name DESC LIMIT 1",
            (namespace, node),
        ).fetchone()
        return int(row[0]) if row else 0

    def placements(self, namespace: str, node: str) -> list[Placement]:
        cache = self._up
        if cache is not None:
            found = cache.get((namespace, node))
            if found is not None:
                return found
            if namespace in self._whole:
                return []
        rows = by_parent(
            Placement(*row)
            for row in self.conn.execute(
                f"SELECT {_PLACEMENT} FROM placements INDEXED BY placements_by_child "
                "WHERE ns = ? AND child = ?",
                (namespace, node),
            )
        )
        if cache is not None:
            cache[(namespace, node)] = rows
        return rows

    def _load_namespace(self, namespace: str) -> None:
        """Read every placement of ``namespace`` into the read's cache at once."""
        if self._up is None or namespace in self._whole:
            return
        up: dict[tuple[str, str], list[Placement]] = {}
        for row in self.conn.execute(
            f"SELECT {_PLACEMENT} FROM placements WHERE ns = ? ORDER BY parent, name",
            (namespace,),
        ):
            pl = Placement(*row)
            up.setdefault((namespace, pl.child), []).append(pl)
        self._up.update(up)
        self._whole.add(namespace)

    def memory_nodes(self, namespace: str) -> Iterator[str]:
        """Every node with a content element, live or deleted, sorted."""
        rows = self.conn.execute(
            "SELECT node FROM memories WHERE ns = ? ORDER BY node", (namespace,)
        ).fetchall()
        for (node,) in rows:
            yield node

    def live_nodes(self, namespace: str) -> Iterator[str]:
        self._load_namespace(namespace)  # the caller is about to visit every memory
        rows = self.conn.execute(
            "SELECT node FROM memories WHERE ns = ? AND deleted = 0 ORDER BY node", (namespace,)
        ).fetchall()
        for (node,) in rows:
            yield node

    def recent_nodes(self, namespace: str) -> Iterator[str]:
        """Live nodes by when their current text was written (an imported version's original
        time, see :func:`noon.graph.reader.written_ms`), newest first. Read in op order from
        the index: a written time is never later than its op's, so a memory is yielded as soon
        as no row still to come can be newer (a fresh import is read through to its oldest
        original time; ordinary writes end the scan at once)."""
        cursor = self.conn.execute(
            "SELECT m.node, m.w_hlc, m.w_node, m.w_seq, CASE WHEN "
            "json_type(op_val(o.val, o.node, o.at, o.digest), '$.written') = 'integer' "
            "THEN json_extract(op_val(o.val, o.node, o.at, o.digest), '$.written') END "
            "FROM memories m INDEXED BY memories_recent LEFT JOIN ops o "
            "ON o.node = m.w_node AND o.seq = m.w_seq WHERE m.ns = ? AND m.deleted = 0 "
            "ORDER BY m.w_hlc DESC, m.w_node DESC, m.w_seq DESC",
            (namespace,),
        )
        waiting: list[_Newest] = []
        while rows := cursor.fetchmany(64):
            for node, hlc, w_node, w_seq, carried in rows:
                written = written_at({WRITTEN: carried})
                key = (written if written is not None else hlc >> 16, hlc, w_node, w_seq)
                bound = (hlc >> 16, hlc, w_node, w_seq)  # no row still to come is newer
                while waiting and waiting[0].key > bound:
                    yield heapq.heappop(waiting).node
                heapq.heappush(waiting, _Newest(key, node))
        while waiting:
            yield heapq.heappop(waiting).node

    def orphans(self, namespace: str) -> list[str]:
        return sorted(n for n in self.live_nodes(namespace) if not self.uris(namespace, n, 1))

    def keywords_of(self, namespace: str, node: str) -> list[str]:
        return [
            k
            for (k,) in self.conn.execute(
                "SELECT keyword FROM keywords WHERE ns = ? AND node = ? ORDER BY keyword",
                (namespace, node),
            )
        ]

    def keywords(self, namespace: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for kw, node in self.conn.execute(
            "SELECT keyword, node FROM keywords WHERE ns = ?", (namespace,)
        ):
            out.setdefault(kw, set()).add(node)
        return out

    def glossary_version(self, namespace: str) -> int:
        row = self.conn.execute(
            "SELECT version FROM glossary WHERE ns = ?", (namespace,)
        ).fetchone()
        return int(row[0]) if row else 0

    def past_edges(self, namespace: str, node: str) -> list[Key]:
        return [
            key_of(k)
            for (k,) in self.conn.execute(
                f"SELECT DISTINCT {KEY} AS k FROM ops INDEXED BY ops_by_child "
                "WHERE ns = ? AND child = ? ORDER BY k",
                (namespace, node),
            )
        ]

    def boot_nodes(self, namespace: str) -> set[str]:
        return {n for (n,) in self.conn.execute("SELECT node FROM boot WHERE ns = ?", (namespace,))}

    # -- conflicts -------------------------------------------------------------------------

    def conflicts(self, namespace: str) -> list[tuple[Key, StoredElement]]:
        contents = {
            key_of(k)[2]
            for (k,) in self.conn.execute(
                "SELECT key FROM elements WHERE ns = ? AND kind = ? AND nheads > 1",
                (namespace, CONTENT),
            )
        }
        contents.update(
            n
            for (n,) in self.conn.execute(
                "SELECT m.node FROM memories m WHERE m.ns = ? AND m.deleted = 1 AND EXISTS "
                "(SELECT 1 FROM placements p WHERE p.ns = m.ns AND p.child = m.node)",
                (namespace,),
            )
        )
        edges = sorted(
            (key[2], key[3])
            for key in (
                key_of(k)
                for (k,) in self.conn.execute(
                    "SELECT key FROM elements WHERE ns = ? AND kind = ? AND nheads > 1 "
                    "AND deleted = 0",
                    (namespace, EDGE),
                )
            )
        )
        out: list[tuple[Key, StoredElement]] = []
        for node in sorted(contents):
            el = self.content(namespace, node)
            if el is not None:
                out.append((content_key(namespace, node), el))
        for parent, name in edges:
            key = edge_key(namespace, parent, name)
            el = self.element(key)
            if el is not None:
                out.append((key, el))
        return out
