"""The URI graph of an in-memory fold: the reference the machine's read model is held to.

Pure: it reads a :class:`~tests.harness.fold.Fold` and keeps derived indexes up to date from the
keys a refresh reports (``update``), or rebuilds them from scratch (``rebuild``). Every answer
is a function of the fold, by the rules in :mod:`noon.graph.reader`; the read model
(:mod:`noon.store.readmodel.graph`) must answer every view and tool exactly as this does, which the
model-based tests check on random multi-node histories.

Placements. ``edge(ns, parent, name)`` is a register; a collision of concurrent placements is
listed as a conflict until a later write of the edge (naming every head) settles it. A
tombstone that wins hides the edge entirely. A node that no root reaches while its content is
live is an *orphan*: listed, readable as ``system://node/<id>``, and placeable again; never
lost.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from noon.core.elements import BOOT, CONTENT, EDGE, KEYWORD, content_key, edge_key
from noon.core.fold import Element
from noon.core.gcpause import paused
from noon.core.ops import Key
from noon.graph.reader import Placement, Walks, is_number_name, placements_of, written_ms
from noon.graph.uri import DEFAULT_DOMAIN, Uri, is_root, root, root_domain
from tests.harness.fold import Fold


@dataclass
class NsGraph:
    """Derived indexes of one namespace."""

    children: dict[str, dict[str, Placement]] = field(default_factory=dict)
    parents: dict[str, dict[tuple[str, str], Placement]] = field(default_factory=dict)
    edges: dict[tuple[str, str], list[Placement]] = field(default_factory=dict)
    keywords: dict[str, set[str]] = field(default_factory=dict)
    node_keywords: dict[str, set[str]] = field(default_factory=dict)
    boot: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    """Nodes with a content element (live or deleted)."""
    glossary_version: int = 0
    placed_once: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    """child -> (parent, name) of every placement element a version of which named it (may
    hold placements whose versions are gone since: readers check the versions)."""


class Graph(Walks):
    """Derived URI-graph indexes over a fold, for every namespace (a
    :class:`~noon.graph.reader.GraphReader`)."""

    def __init__(self, fold: Fold) -> None:
        self.fold = fold
        self.spaces: dict[str, NsGraph] = {}
        self.rebuild(fold)

    # -- maintenance -----------------------------------------------------------------------

    def rebuild(self, fold: Fold) -> None:
        self.fold = fold
        self.spaces = {}
        with paused():
            for key in list(fold.elements):
                self._apply_key(key)

    def update(self, fold: Fold, keys: Iterable[Key], *, reset: bool = False) -> None:
        """Bring the indexes up to date after the fold gained ``keys``."""
        if reset or fold is not self.fold:
            self.rebuild(fold)
            return
        for key in keys:
            self._apply_key(key)

    def ns(self, namespace: str) -> NsGraph:
        g = self.spaces.get(namespace)
        if g is None:
            g = self.spaces[namespace] = NsGraph()
        return g

    def _apply_key(self, key: Key) -> None:
        kind = key[0]
        if kind == CONTENT and len(key) == 3:
            self.ns(key[1]).nodes.add(key[2])
        elif kind == EDGE and len(key) == 4:
            self._apply_edge(key)
        elif kind == KEYWORD and len(key) == 4:
            self._apply_keyword(key)
        elif kind == BOOT and len(key) == 3:
            g = self.ns(key[1])
            el = self.fold.elements.get(key)
            if el is not None and not el.deleted:
                g.boot.add(key[2])
            else:
                g.boot.discard(key[2])

    def _apply_edge(self, key: Key) -> None:
        _, namespace, parent, name = key
        g = self.ns(namespace)
        for old in g.edges.pop((parent, name), []):
            g.children.get(parent, {}).pop(old.name, None)
            ps = g.parents.get(old.child)
            if ps is not None:
                ps.pop((parent, old.name), None)
                if not ps:
                    del g.parents[old.child]
        el = self.fold.elements.get(key)
        for v in el.versions if el is not None else ():
            if v.val is not None:
                g.placed_once.setdefault(v.val["child"], set()).add((parent, name))
        new = placements_of(el.winner, el.heads, parent, name) if el is not None else []
        if new:
            g.edges[(parent, name)] = new
            kids = g.children.setdefault(parent, {})
            for pl in new:
                kids[pl.name] = pl
                g.parents.setdefault(pl.child, {})[(parent, pl.name)] = pl

    def _apply_keyword(self, key: Key) -> None:
        _, namespace, keyword, node = key
        g = self.ns(namespace)
        g.glossary_version += 1
        el = self.fold.elements.get(key)
        if el is not None and not el.deleted:
            g.keywords.setdefault(keyword, set()).add(node)
            g.node_keywords.setdefault(node, set()).add(keyword)
        else:
            nodes = g.keywords.get(keyword)
            if nodes is not None:
                nodes.discard(node)
                if not nodes:
                    del g.keywords[keyword]
            kws = g.node_keywords.get(node)
            if kws is not None:
                kws.discard(keyword)
                if not kws:
                    del g.node_keywords[node]

    # -- elements --------------------------------------------------------------------------

    def element(self, key: Key) -> Element | None:
        return self.fold.elements.get(key)

    def content(self, namespace: str, node: str) -> Element | None:
        return self.fold.elements.get(content_key(namespace, node))

    def is_live(self, namespace: str, node: str) -> bool:
        el = self.content(namespace, node)
        return el is not None and not el.deleted

    # -- structure -------------------------------------------------------------------------

    def domains(self, namespace: str) -> list[str]:
        """``core`` (always there, maybe empty) and every domain holding a memory."""
        g = self.spaces.get(namespace)
        found = {
            root_domain(p) for p, kids in (g.children.items() if g else ()) if is_root(p) and kids
        }
        return sorted(found | {DEFAULT_DOMAIN})

    def resolve(self, namespace: str, uri: Uri) -> tuple[str, Placement | None] | None:
        """The node a URI names and the placement it was reached by; the root yields
        (``@domain``, None). None when nothing is there."""
        g = self.spaces.get(namespace)
        node = root(uri.domain)
        placement: Placement | None = None
        for seg in uri.path:
            kids = g.children.get(node) if g else None
            pl = kids.get(seg) if kids else None
            if pl is None:
                return None
            node, placement = pl.child, pl
        return node, placement

    def children(self, namespace: str, node: str) -> list[Placement]:
        g = self.spaces.get(namespace)
        kids = g.children.get(node, {}) if g else {}
        return sorted(kids.values(), key=lambda p: (p.priority, p.name))

    def highest_number(self, namespace: str, node: str) -> int:
        names = [p.key_name for p in self.children(namespace, node)]
        return max((int(n) for n in names if is_number_name(n)), default=0)

    def placements(self, namespace: str, node: str) -> list[Placement]:
        """Every live placement of ``node`` (its incoming edges)."""
        g = self.spaces.get(namespace)
        ps = g.parents.get(node, {}) if g else {}
        return sorted(ps.values(), key=lambda p: (p.parent, p.name))

    def memory_nodes(self, namespace: str) -> Iterator[str]:
        """Every node with a content element, live or deleted, sorted."""
        g = self.spaces.get(namespace)
        yield from sorted(g.nodes) if g else ()

    def live_nodes(self, namespace: str) -> Iterator[str]:
        g = self.spaces.get(namespace)
        for n in sorted(g.nodes) if g else ():
            if self.is_live(namespace, n):
                yield n

    def recent_nodes(self, namespace: str) -> Iterator[str]:
        """Live nodes, the most recently written first (by an imported version's original
        time, :func:`~noon.graph.reader.written_ms`; then by op order)."""
        live = list(self.live_nodes(namespace))
        winners = {}
        for n in live:
            el = self.content(namespace, n)
            assert el is not None, n  # a live node has content
            winners[n] = el.winner
        order = {n: (written_ms(w), *w.order) for n, w in winners.items()}
        yield from heapq.nlargest(len(live), live, key=order.__getitem__)

    def orphans(self, namespace: str) -> list[str]:
        """Live nodes no domain root reaches (after concurrent moves, deletes or cycles)."""
        return sorted(n for n in self.live_nodes(namespace) if not self.uris(namespace, n, 1))

    def keywords_of(self, namespace: str, node: str) -> list[str]:
        g = self.spaces.get(namespace)
        return sorted(g.node_keywords.get(node, ())) if g else []

    def keywords(self, namespace: str) -> dict[str, set[str]]:
        """Every bound keyword of the namespace and the nodes it is bound to."""
        g = self.spaces.get(namespace)
        return {kw: set(nodes) for kw, nodes in g.keywords.items()} if g else {}

    def glossary_version(self, namespace: str) -> int:
        """Changes whenever the namespace's keywords change (a cache key)."""
        g = self.spaces.get(namespace)
        return g.glossary_version if g else 0

    def past_edges(self, namespace: str, node: str) -> list[Key]:
        placed = self.ns(namespace).placed_once.get(node, ())
        return sorted(edge_key(namespace, parent, name) for parent, name in placed)

    def boot_nodes(self, namespace: str) -> set[str]:
        g = self.spaces.get(namespace)
        return set(g.boot) if g else set()

    # -- conflicts -------------------------------------------------------------------------

    def conflicts(self, namespace: str) -> list[tuple[Key, Element]]:
        """Register elements of ``namespace`` with concurrent versions, and nodes whose content
        a delete removed while a concurrent placement keeps them reachable."""
        out: list[tuple[Key, Element]] = []
        g = self.spaces.get(namespace)
        if g is None:
            return out
        for n in sorted(g.nodes):
            el = self.content(namespace, n)
            if el is None:
                continue
            if el.conflicted or (el.deleted and n in g.parents):
                out.append((content_key(namespace, n), el))
        for parent, name in sorted(g.edges):
            key = edge_key(namespace, parent, name)
            el = self.fold.elements.get(key)
            if el is not None and el.conflicted:
                out.append((key, el))
        return out
