"""A memory's changes as an agent finds them: every change (tool call) that touched its text,
placements, keywords or boot membership, newest first, each in words with the id
``undo_change`` takes."""

from __future__ import annotations

from dataclasses import dataclass

from noon.app.words import describe
from noon.store.queries import Queries
from noon.store.readmodel.graph import SqlGraph

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
