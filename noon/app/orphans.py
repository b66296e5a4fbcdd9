"""Orphans: live memories no domain root reaches (every placement of theirs is under a deleted
memory, or they lost their last placement to a concurrent move). Placing or deleting one is
:func:`noon.app.memories.move` and :func:`noon.app.memories.delete` on ``system://node/<id>``."""

from __future__ import annotations

from dataclasses import dataclass

from noon.graph.memory_view import show_uri
from noon.graph.reader import live_text, op_time_ms
from noon.graph.uri import is_root, root_domain
from noon.store.access import GraphService
from noon.store.queries import Queries
from noon.store.readmodel.graph import SqlGraph


@dataclass(frozen=True)
class Orphan:
    node: str
    text: str
    unreachable_under: list[str]
    """The URIs it is still placed at, under memories no root reaches."""
    children: int
    modified_ms: int | None
    client: str | None
    machine: str | None


def orphans(svc: GraphService, ns: str, offset: int, limit: int) -> tuple[int, list[Orphan]]:
    """How many orphans ``ns`` has, and those ``offset`` to ``offset + limit``."""
    return svc.read(lambda s: found_in(s.graph, ns, offset, limit))


def found_in(g: SqlGraph, ns: str, offset: int, limit: int | None) -> tuple[int, list[Orphan]]:
    """:func:`orphans` on a graph already being read (one snapshot with what the caller reads);
    every one from ``offset`` on when ``limit`` is None."""

    def name(ident: str) -> str:
        return f"{root_domain(ident)}://" if is_root(ident) else show_uri(g, ns, ident)

    found = g.orphans(ns)
    shown = found[offset:] if limit is None else found[offset : offset + limit]
    counts = Queries(g).child_counts(ns, shown)
    out = []
    for n in shown:
        el = g.content(ns, n)
        under = [f"{name(p.parent).rstrip('/')}/{p.name}" for p in g.placements(ns, n)]
        last = el.winner if el is not None else None
        out.append(
            Orphan(
                n,
                live_text(el) if el is not None else "",
                under,
                counts[n],
                op_time_ms(last) if last is not None else None,
                (last.by or "unknown") if last is not None else None,
                last.node if last is not None else None,
            )
        )
    return len(found), out
