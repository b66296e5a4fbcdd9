"""A memory's changes: every change (tool call) that touched its text, placements, keywords or
boot membership, newest first; as an agent finds them (each in words with the id
``undo_change`` takes) and as the page's timeline shows them (each with what undoing its ops
about the memory would do), and an entity's changes as the page lists them. The op log op by op
as ``noon log`` and ``noon history`` print it: a namespace's newest ops, and every op held
about one memory or entity."""

from __future__ import annotations

from dataclasses import dataclass

from noon.app.words import describe
from noon.core.elements import CONTENT, EDGE
from noon.core.ops import Op
from noon.errors import NotFound
from noon.graph import undo
from noon.graph.plan import locate_past
from noon.kg import uri as kg_uri
from noon.store.queries import Queries
from noon.store.readmodel.changes import Head
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.rows import key_text
from noon.store.rollback import lookup

SUMMARY_OPS = 6
"""Ops of a change said in words; the rest are counted."""


@dataclass(frozen=True)
class ChangeLine:
    id: str
    time_ms: int
    client: str | None
    machine: str
    what: list[str]
    """What its first ops did (at most :data:`SUMMARY_OPS`)."""
    more: int
    """Its ops beyond those."""


def memory_changes(graph: SqlGraph, ns: str, node: str, limit: int) -> tuple[int, list[ChangeLine]]:
    """How many changes touched memory ``node``, and the newest ``limit`` of them."""
    queries = Queries(graph)
    refs = queries.about(queries.memory_keys(ns, node), node)
    out = []
    for r in refs[:limit]:
        head = queries.head(r, SUMMARY_OPS)
        what = [describe(graph, op) for op in head.first]
        out.append(
            ChangeLine(r.id, r.stamp[0] >> 16, r.client, r.author, what, r.count - len(head.first))
        )
    return len(refs), out


@dataclass(frozen=True)
class MemoryChange:
    head: Head
    text: Op | None
    """Its op on the memory's text, if it wrote one."""
    undo: undo.Undo
    """What undoing its ops about the memory would do."""


def _about(queries: Queries, op: Op, node: str) -> bool:
    """Whether ``op`` is about ``node``: its text, a placement of it or under it, its keywords
    or boot membership."""
    return (op.el[0] == EDGE and op.el[2] == node) or queries.subject(op) == node


def memory_timeline(
    graph: SqlGraph, ns: str, node: str, offset: int, limit: int
) -> tuple[int, list[MemoryChange]]:
    """How many changes touched memory ``node``, and those ``offset`` to ``offset + limit``,
    each with only its ops about the memory (read through the element index and the key order:
    a huge change costs what it did to this memory)."""
    queries = Queries(graph)
    keys = queries.memory_keys(ns, node)
    refs = queries.about(keys, node)
    texts = [key_text(k) for k in keys]
    under = key_text((EDGE, ns, node))[:-1] + ","
    state = lookup(graph)
    out = []
    for r in refs[offset : offset + limit]:
        held = {op.id: op for op in queries.ops_on(r, texts)}
        held.update((op.id, op) for op in queries.ops_under(r, under))
        about = (op for op in held.values() if _about(queries, op, node))
        mine = sorted(about, key=lambda o: o.seq)
        text_op = next((op for op in mine if op.el[0] == CONTENT), None)
        head = queries.head(r, SUMMARY_OPS)
        out.append(MemoryChange(head, text_op, undo.preview([mine], state)))
    return len(refs), out


ENTITY_CHANGES = 50
"""Changes listed with an entity."""


def entity_changes(graph: SqlGraph, ns: str, name: str) -> list[Head]:
    """The newest :data:`ENTITY_CHANGES` changes about knowledge-graph entity ``name``."""
    queries = Queries(graph)
    refs = queries.about(queries.entity_keys(ns, name), f"kg:{name}")
    return [queries.head(r, SUMMARY_OPS) for r in refs[:ENTITY_CHANGES]]


def newest_ops(
    graph: SqlGraph, ns: str, limit: int, node: str | None = None, client: str | None = None
) -> list[Op]:
    """The ``limit`` newest ops of namespace ``ns`` (at least one), optionally only those
    written on machine ``node`` or by ``client``."""
    return Queries(graph).recent_ops(ns, max(1, limit), node=node, client=client)


def ops_about(graph: SqlGraph, ns: str, uri: str, limit: int) -> list[Op]:
    """Every op held about what ``uri`` names, newest first, the first ``limit`` (at least one):
    for ``kg://NAME`` the entity's creation, observations and relations; else the memory the URI
    (or ``system://node/<id>``) names, or, for a URI whose memory was deleted since, the one it
    named last: its text versions, placements, keywords and boot membership. Raises
    :class:`~noon.graph.plan.MemoryNotFound` for a URI that never named a memory here, and
    :class:`~noon.errors.NotFound` for an entity never written."""
    queries = Queries(graph)
    name = kg_uri.entity_name(uri.strip())
    if name:
        keys = queries.entity_keys(ns, name)
        if not keys:
            raise NotFound(f"no entity named {name!r} was ever written here")
    else:
        keys = queries.memory_keys(ns, locate_past(graph, ns, uri)[0])
    return queries.versions(keys)[: max(1, limit)]
