"""The URI graph derived from the fold: placements, parents, keywords and boot membership.

Pure: it reads a :class:`~noon.core.fold.Fold` and keeps derived indexes up to date from the
keys a refresh reports (``update``), or rebuilds them from scratch (``rebuild``). Nothing here
is stored; every answer is a function of the fold.

Placements. ``edge(ns, parent, name)`` is a register. Its winning version places ``child``
under ``parent`` as ``name``. When concurrent writers put *different* nodes under one name, the
other live heads are placed too, as ``name~xxxxxxxx`` (a hash of the child id), so no node
disappears behind a name collision; the collision is listed as a conflict until a later write of
the edge (naming every head) settles it. A tombstone that wins hides the edge entirely.

URIs are derived by walking parents up to a domain root (``@domain``). A node that no root
reaches while its content is live is an *orphan*: listed, readable as ``system://node/<id>``,
and placeable again; never lost.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from noon.core.elements import BOOT, CONTENT, EDGE, KEYWORD, content_key, edge_key
from noon.core.fold import Element, Fold
from noon.core.ops import Key, Op
from noon.graph.uri import Uri, is_root, root, root_domain

DEFAULT_DOMAIN = "core"
MAX_URIS = 32
"""URIs derived per node at most (aliases of aliases multiply)."""


def version_id(op: Op) -> str:
    return f"{op.node}:{op.seq}"


def op_time_ms(op: Op) -> int:
    return op.hlc >> 16


def collision_suffix(child: str) -> str:
    return hashlib.blake2b(child.encode(), digest_size=4).hexdigest()


class Placement(NamedTuple):
    """One live placement of ``child`` under ``parent``, shown as ``name``."""

    parent: str
    name: str
    """The segment as shown in URIs (``key_name`` or ``key_name~xxxxxxxx``)."""
    key_name: str
    """The name part of the edge key."""
    child: str
    priority: int
    disclosure: str
    op: Op


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


@dataclass
class Dirty:
    """What an update touched, for indexes built on top (search, glossary)."""

    nodes: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, node) whose own document changed (content, keywords, placement data)."""
    moved: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, node) whose placements changed: URIs of its whole subtree may differ."""
    reset: bool = False


class Graph:
    """Derived URI-graph indexes over a fold, for every namespace."""

    def __init__(self, fold: Fold) -> None:
        self.fold = fold
        self.spaces: dict[str, NsGraph] = {}
        self.listeners: list[Dirty] = []
        self.rebuilds = 0
        """Full rebuilds so far (a new fold or a store reset); updates are incremental."""
        self.rebuild(fold)

    # -- maintenance -----------------------------------------------------------------------

    def rebuild(self, fold: Fold) -> None:
        self.rebuilds += 1
        self.fold = fold
        self.spaces = {}
        # Allocating ~one object per placement would otherwise trigger full collections that
        # walk the whole fold again and again; nothing here creates reference cycles.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            for key, el in list(fold.elements.items()):
                if key[0] == EDGE and len(key) == 4:
                    self._add_edge(key, el)  # the bulk path: nothing to remove, no one to tell
                else:
                    self._apply_key(key)
        finally:
            if was_enabled:
                gc.enable()
        for d in self.listeners:
            d.reset = True

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

    def _touch(self, namespace: str, node: str, *, moved: bool = False) -> None:
        for d in self.listeners:
            (d.moved if moved else d.nodes).add((namespace, node))

    def _apply_key(self, key: Key) -> None:
        kind = key[0]
        if kind == CONTENT and len(key) == 3:
            self.ns(key[1]).nodes.add(key[2])
            self._touch(key[1], key[2])
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
            self._touch(namespace, old.child, moved=True)
        el = self.fold.elements.get(key)
        if el is not None:
            for pl in self._add_edge(key, el):
                self._touch(namespace, pl.child, moved=True)

    def _add_edge(self, key: Key, el: Element) -> list[Placement]:
        _, namespace, parent, name = key
        new = placements_of(el, parent, name)
        if new:
            g = self.ns(namespace)
            g.edges[(parent, name)] = new
            kids = g.children.setdefault(parent, {})
            for pl in new:
                kids[pl.name] = pl
                g.parents.setdefault(pl.child, {})[(parent, pl.name)] = pl
        return new

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
        self._touch(namespace, node)

    # -- content ---------------------------------------------------------------------------

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

    def placements(self, namespace: str, node: str) -> list[Placement]:
        """Every live placement of ``node`` (its incoming edges)."""
        g = self.spaces.get(namespace)
        ps = g.parents.get(node, {}) if g else {}
        return sorted(ps.values(), key=lambda p: (p.parent, p.name))

    def uris(self, namespace: str, node: str, limit: int = MAX_URIS) -> list[tuple[Uri, int]]:
        """URIs of ``node`` with the priority of their last placement, best first.

        Walks up parents to domain roots; a path never visits a node twice, so cycles formed by
        concurrent moves end the walk instead of looping."""
        g = self.spaces.get(namespace)
        if g is None:
            return []
        found: list[tuple[Uri, int]] = []

        def walk(n: str, suffix: tuple[str, ...], seen: frozenset[str], prio: int) -> None:
            for pl in g.parents.get(n, {}).values():
                if len(found) >= limit:
                    return
                if pl.parent in seen:
                    continue
                p = pl.priority if not suffix else prio
                if is_root(pl.parent):
                    found.append((Uri(root_domain(pl.parent), (pl.name, *suffix)), p))
                else:
                    walk(pl.parent, (pl.name, *suffix), seen | {pl.parent}, p)

        walk(node, (), frozenset((node,)), 0)
        found.sort(key=lambda u: (len(u[0].path), u[1], len(str(u[0])), str(u[0])))
        return found

    def primary_uri(self, namespace: str, node: str) -> Uri | None:
        us = self.uris(namespace, node)
        return us[0][0] if us else None

    def subtree(self, namespace: str, node: str) -> list[str]:
        """``node`` and every node below it (each once)."""
        g = self.spaces.get(namespace)
        out, seen, stack = [], {node}, [node]
        while stack:
            n = stack.pop()
            out.append(n)
            for pl in (g.children.get(n, {}) if g else {}).values():
                if pl.child not in seen:
                    seen.add(pl.child)
                    stack.append(pl.child)
        return out

    def is_ancestor(self, namespace: str, maybe_ancestor: str, node: str) -> bool:
        """True when ``maybe_ancestor`` is ``node`` or above it through any placement."""
        g = self.spaces.get(namespace)
        if g is None:
            return maybe_ancestor == node
        seen, stack = {node}, [node]
        while stack:
            n = stack.pop()
            if n == maybe_ancestor:
                return True
            for pl in g.parents.get(n, {}).values():
                if pl.parent not in seen:
                    seen.add(pl.parent)
                    stack.append(pl.parent)
        return False

    def live_nodes(self, namespace: str) -> Iterator[str]:
        g = self.spaces.get(namespace)
        for n in g.nodes if g else ():
            if self.is_live(namespace, n):
                yield n

    def orphans(self, namespace: str) -> list[str]:
        """Live nodes no domain root reaches (after concurrent moves, deletes or cycles)."""
        return sorted(n for n in self.live_nodes(namespace) if not self.uris(namespace, n, 1))

    def keywords_of(self, namespace: str, node: str) -> list[str]:
        g = self.spaces.get(namespace)
        return sorted(g.node_keywords.get(node, ())) if g else []

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


def placements_of(el: Element, parent: str, name: str) -> list[Placement]:
    """The placements an edge element yields (see the module docstring)."""
    w = el.winner
    if w.val is None:
        return []
    out = [_placement(w, parent, name, name)]
    if len(el.heads) == 1:
        return out
    seen = {out[0].child}
    heads = sorted(el.heads.values(), key=lambda o: o.order, reverse=True)
    for h in heads:
        if h.val is None or h.val["child"] in seen:
            continue
        seen.add(h.val["child"])
        out.append(_placement(h, parent, f"{name}~{collision_suffix(h.val['child'])}", name))
    return out


def _placement(op: Op, parent: str, shown: str, key_name: str) -> Placement:
    assert op.val is not None
    return Placement(
        parent=parent,
        name=shown,
        key_name=key_name,
        child=op.val["child"],
        priority=op.val["priority"],
        disclosure=op.val["disclosure"],
        op=op,
    )


def live_text(el: Element) -> str:
    """The text to show: the winner's, or for a deleted node kept reachable by a concurrent
    placement, its last live version."""
    if el.winner.val is not None:
        return el.winner.val["text"]
    lives = [v for v in (el.versions or []) if v.val is not None]
    if not lives:
        return ""
    return max(lives, key=lambda o: o.order).val["text"]  # type: ignore[index]
