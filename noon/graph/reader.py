"""What a reader of the URI graph offers, and the rules every reader shares.

Two readers exist: the machine's read model (:class:`noon.store.readmodel.graph.SqlGraph`), which
every process queries, and the test kit's ``Graph`` over an in-memory fold
(``tests/harness/uri_graph.py``), which the tests hold the read model to. Views and write
planning take a :class:`GraphReader` and work on either.

The rules that turn folded elements into placements and URIs live here once, as pure
functions over lookups the reader supplies:
- a placement edge's winning version places its child under its name; concurrent heads that
  place *other* children are placed too, as ``name~xxxxxxxx`` (a hash of the child id), so no
  node disappears behind a name collision;
- URIs are walked up from a node to domain roots; a path never visits a node twice, so the
  cycles concurrent moves can form end the walk instead of looping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from noon.core.elements import edge_key, written_at
from noon.core.ops import Key, Op, OpId
from noon.graph.uri import MAX_SEGMENTS, Uri, is_root, root, root_domain

MAX_URIS = 32
"""URIs derived per node at most (aliases of aliases multiply)."""
WALK_BUDGET = 20_000
"""Steps one URI walk may take: a pathological web of aliases and cycles cannot hold a core."""


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


class ElementLike(Protocol):
    """An element's folded state, as :class:`noon.core.fold.Element` exposes it."""

    @property
    def winner(self) -> Op: ...
    @property
    def heads(self) -> Mapping[OpId, Op]: ...
    @property
    def versions(self) -> Sequence[Op]: ...
    @property
    def deleted(self) -> bool: ...
    @property
    def conflicted(self) -> bool: ...


class GraphReader(Protocol):
    """The URI graph of every namespace, as views and write planning read it."""

    def element(self, key: Key) -> ElementLike | None: ...
    def content(self, namespace: str, node: str) -> ElementLike | None: ...
    def is_live(self, namespace: str, node: str) -> bool: ...
    def domains(self, namespace: str) -> list[str]: ...
    def resolve(self, namespace: str, uri: Uri) -> tuple[str, Placement | None] | None: ...
    def children(self, namespace: str, node: str) -> list[Placement]: ...
    def highest_number(self, namespace: str, node: str) -> int:
        """The largest child name of ``node`` that is a number (see :func:`is_number_name`),
        0 if none."""
        ...

    def placements(self, namespace: str, node: str) -> list[Placement]: ...
    def uris(self, namespace: str, node: str, limit: int = MAX_URIS) -> list[tuple[Uri, int]]: ...
    def primary_uri(self, namespace: str, node: str) -> Uri | None: ...
    def subtree(self, namespace: str, node: str) -> list[str]: ...
    def is_ancestor(self, namespace: str, maybe_ancestor: str, node: str) -> bool: ...
    def memory_nodes(self, namespace: str) -> Iterable[str]: ...
    def live_nodes(self, namespace: str) -> Iterable[str]: ...
    def recent_nodes(self, namespace: str) -> Iterable[str]: ...
    def orphans(self, namespace: str) -> list[str]: ...
    def keywords_of(self, namespace: str, node: str) -> list[str]: ...
    def keywords(self, namespace: str) -> dict[str, set[str]]: ...
    def glossary_version(self, namespace: str) -> int: ...
    def boot_nodes(self, namespace: str) -> set[str]: ...
    def past_edges(self, namespace: str, node: str) -> list[Key]:
        """The placement elements a held version of which places ``node`` (live or not)."""
        ...

    def conflicts(self, namespace: str) -> Sequence[tuple[Key, ElementLike]]: ...


def is_number_name(name: str) -> bool:
    """A child name that counts as a number for auto-naming: ASCII digits, no leading zero (the
    read model's partial index ``placements_numbered`` states the same rule in SQL)."""
    return name.isascii() and name.isdigit() and name[0] != "0"


class Walks:
    """The answers every reader derives the same way from its ``placements`` (a node's incoming
    edges, sorted by parent and name) and ``children``."""

    def placements(self, namespace: str, node: str) -> list[Placement]:
        raise NotImplementedError

    def children(self, namespace: str, node: str) -> list[Placement]:
        raise NotImplementedError

    def uris(self, namespace: str, node: str, limit: int = MAX_URIS) -> list[tuple[Uri, int]]:
        """URIs of ``node`` with the priority of their last placement, best first."""
        return walk_uris(lambda n: self.placements(namespace, n), node, limit)

    def primary_uri(self, namespace: str, node: str) -> Uri | None:
        us = self.uris(namespace, node)
        return us[0][0] if us else None

    def subtree(self, namespace: str, node: str) -> list[str]:
        """``node`` and every node below it (each once)."""
        return closure(lambda n: (p.child for p in self.children(namespace, n)), node)

    def is_ancestor(self, namespace: str, maybe_ancestor: str, node: str) -> bool:
        """True when ``maybe_ancestor`` is ``node`` or above it through any placement."""
        up = closure(lambda n: (p.parent for p in self.placements(namespace, n)), node)
        return maybe_ancestor in up


def version_id(op: Op) -> str:
    return version_of(op.node, op.seq)


def version_of(node: str, seq: int) -> str:
    """The id of the version the op ``seq`` of ``node`` wrote."""
    return f"{node}:{seq}"


def change_id(op: Op) -> str:
    """The change that wrote ``op`` (one tool call's batch, or a lone op): ``node:seq`` of the
    batch's last op, the same on every machine."""
    return f"{op.node}:{op.bat or op.seq}"


def op_time_ms(op: Op) -> int:
    return op.hlc >> 16


def written_ms(op: Op) -> int:
    """When this version was written: the time an import carried over, else the op's."""
    carried = written_at(op.val)
    return carried if carried is not None else op_time_ms(op)


def collision_suffix(child: str) -> str:
    return hashlib.blake2b(child.encode(), digest_size=4).hexdigest()


def placements_of(winner: Op, heads: Mapping[OpId, Op], parent: str, name: str) -> list[Placement]:
    """The placements an edge element yields (see the module docstring)."""
    if winner.val is None:
        return []
    out = [_placement(winner, parent, name, name)]
    if len(heads) == 1:
        return out
    seen = {out[0].child}
    for h in sorted(heads.values(), key=lambda o: o.order, reverse=True):
        if h.val is None or h.val["child"] in seen:
            continue
        seen.add(h.val["child"])
        out.append(_placement(h, parent, f"{name}~{collision_suffix(h.val['child'])}", name))
    return out


def _placement(op: Op, parent: str, shown: str, key_name: str) -> Placement:
    val: dict[str, Any] = op.val or {}
    return Placement(
        parent=parent,
        name=shown,
        key_name=key_name,
        child=val["child"],
        priority=val["priority"],
        disclosure=val["disclosure"],
    )


def live_text(el: ElementLike) -> str:
    """The text to show: the winner's, or for a deleted node kept reachable by a concurrent
    placement, its last live version."""
    if el.winner.val is not None:
        return str(el.winner.val["text"])
    lives = [v for v in el.versions if v.val is not None]
    if not lives:
        return ""
    return str(max(lives, key=lambda o: o.order).val["text"])  # type: ignore[index]


def walk_uris(
    parents: Callable[[str], Sequence[Placement]], node: str, limit: int = MAX_URIS
) -> list[tuple[Uri, int]]:
    """URIs of ``node`` with the priority of their last placement, best first: walks up
    ``parents`` (each node's placements, sorted) to domain roots."""
    found: list[tuple[Uri, int]] = []
    budget = WALK_BUDGET
    # Depth first with a stack of iterators, not a recursive closure: a closure that calls
    # itself is a reference cycle, which only the garbage collector frees (with everything it
    # holds), and a fold pauses the collector while it walks tens of thousands of these.
    stack: list[tuple[Iterator[Placement], tuple[str, ...], frozenset[str], int]] = [
        (iter(parents(node)), (), frozenset((node,)), 0)
    ]
    while stack:
        steps, suffix, seen, prio = stack[-1]
        pl = next(steps, None)
        if pl is None:
            stack.pop()
            continue
        budget -= 1
        if len(found) >= limit or budget <= 0:
            break  # every level above would stop at its next step too
        if pl.parent in seen:
            continue
        p = pl.priority if not suffix else prio
        if is_root(pl.parent):
            found.append((Uri(root_domain(pl.parent), (pl.name, *suffix)), p))
        else:
            stack.append((iter(parents(pl.parent)), (pl.name, *suffix), seen | {pl.parent}, p))
    if len(found) > 1:
        found.sort(key=lambda u: (len(u[0].path), u[1], len(str(u[0])), str(u[0])))
    return found


def closure(step: Callable[[str], Iterable[str]], start: str) -> list[str]:
    """``start`` and every node ``step`` reaches from it, each once (cycles end the walk)."""
    out, seen, stack = [], {start}, [start]
    while stack:
        n = stack.pop()
        out.append(n)
        for nxt in step(n):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return out


def resolve_past(graph: GraphReader, namespace: str, uri: Uri) -> str | None:
    """The node ``uri`` names now or, where a placement on its path was removed since, the node
    that placement held last: a deleted memory's history stays reachable by the URI it had."""
    node = root(uri.domain)
    for seg in uri.path:
        live = next((p for p in graph.children(namespace, node) if p.name == seg), None)
        if live is not None:
            node = live.child
            continue
        el = graph.element(edge_key(namespace, node, seg))
        lives = [v for v in el.versions if v.val is not None] if el is not None else []
        if not lives:
            return None
        node = str(max(lives, key=lambda o: o.order).val["child"])  # type: ignore[index]
    return node


def last_placement(graph: GraphReader, namespace: str, node: str) -> Placement | None:
    """Where ``node`` was placed last (its latest held placement version naming it), with that
    placement's priority and disclosure: what placing a deleted or orphaned memory again
    restores when the caller names neither."""
    best: tuple[Any, Key, Op] | None = None
    for key in graph.past_edges(namespace, node):
        el = graph.element(key)
        for v in el.versions if el is not None else ():
            names_it = v.val is not None and v.val.get("child") == node
            if names_it and (best is None or v.order > best[0]):
                best = (v.order, key, v)
    if best is None:
        return None
    _, key, op = best
    return _placement(op, key[2], key[3], key[3])


def past_uri(graph: GraphReader, namespace: str, node: str) -> Uri | None:
    """The URI ``node`` had at its last placement: under its parent's URI, or the one its
    parent had, when that is gone too (up to :data:`~noon.graph.uri.MAX_SEGMENTS` levels)."""
    names: list[str] = []
    seen = {node}
    while len(names) < MAX_SEGMENTS:
        pl = last_placement(graph, namespace, node)
        if pl is None:
            return None
        names.insert(0, pl.name)
        if is_root(pl.parent):
            return Uri(root_domain(pl.parent), tuple(names))
        above = graph.primary_uri(namespace, pl.parent)
        if above is not None:
            return Uri(above.domain, (*above.path, *names))
        if pl.parent in seen:
            return None
        seen.add(node := pl.parent)
    return None
