"""The changes of one memory or one knowledge-graph entity, newest first, read from the op log
of the read model: the elements that make up the memory (:mod:`noon.store.readmodel.oplog`)
and the changes with an op about it (used only by :mod:`noon.web.data`, whose docstrings
describe the shapes)."""

from __future__ import annotations

from typing import Any

from noon.app.changes import Review
from noon.core.elements import CONTENT, EDGE
from noon.core.ops import Op
from noon.graph import undo
from noon.graph.memory_view import show_uri
from noon.graph.reader import version_id
from noon.store.queries import Queries
from noon.store.readmodel.graph import SqlGraph
from noon.store.readmodel.rows import key_text
from noon.store.rollback import lookup
from noon.web import queue, undo_preview

ENTITY_CHANGES = 50
"""Changes listed with an entity."""


def _about(queries: Queries, op: Op, node: str) -> bool:
    """Whether ``op`` is about ``node``: its text, a placement of it or under it, its keywords
    or boot membership."""
    return (op.el[0] == EDGE and op.el[2] == node) or queries.subject(op) == node


def timeline(graph: SqlGraph, ns: str, node: str, offset: int, limit: int) -> dict[str, Any]:
    """The memory's changes ``offset`` to ``offset + limit``, each with only its ops about the
    memory (read through the element index and the key order: a huge change costs what it did
    to this memory)."""
    queries = Queries(graph)
    el = graph.content(ns, node)
    keys = queries.memory_keys(ns, node)
    refs = queries.about(keys, node)
    texts = [key_text(k) for k in keys]
    under = key_text((EDGE, ns, node))[:-1] + ","
    state = lookup(graph)
    review = Review(graph, ns)
    items = []
    for r in refs[offset : offset + limit]:
        held = {op.id: op for op in queries.ops_on(r, texts)}
        held.update((op.id, op) for op in queries.ops_under(r, under))
        about = (op for op in held.values() if _about(queries, op, node))
        mine = sorted(about, key=lambda o: o.seq)
        text_op = next((op for op in mine if op.el[0] == CONTENT), None)
        items.append(
            {
                **queue.item(graph, review, queue.head(queries, r)),
                "version": None
                if text_op is None
                else {
                    "version": version_id(text_op),
                    "deleted": text_op.val is None,
                    "current": el is not None and text_op.id == el.winner.id,
                },
                "steps": undo_preview.steps(graph, ns, undo.preview([mine], state)),
            }
        )
    return {
        "uri": show_uri(graph, ns, node),
        "node": node,
        "version": version_id(el.winner) if el is not None else None,
        "total": len(refs),
        "offset": offset,
        "items": items,
    }


def entity_changes(graph: SqlGraph, ns: str, name: str) -> list[dict[str, Any]]:
    queries = Queries(graph)
    refs = queries.about(queries.entity_keys(ns, name), f"kg:{name}")
    review = Review(graph, ns)
    return [queue.item(graph, review, queue.head(queries, r)) for r in refs[:ENTITY_CHANGES]]
