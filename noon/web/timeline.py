"""The changes of one memory or one knowledge-graph entity, newest first, as the page shows them:
as :mod:`noon.app.history` finds them, a memory's with the undo of each; used only by
:mod:`noon.web.data`, whose docstrings describe the shapes."""

from __future__ import annotations

from typing import Any

from noon.app import history
from noon.app.changes import Review
from noon.graph.memory_view import show_uri
from noon.graph.reader import version_id
from noon.store.readmodel.graph import SqlGraph
from noon.web import queue, undo_preview


def timeline(graph: SqlGraph, ns: str, node: str, offset: int, limit: int) -> dict[str, Any]:
    """The memory's changes ``offset`` to ``offset + limit``, as
    :func:`noon.app.history.memory_timeline` finds and plans them."""
    el = graph.content(ns, node)
    total, found = history.memory_timeline(graph, ns, node, offset, limit)
    review = Review(graph, ns)
    items = [
        {
            **queue.item(graph, review, c.head),
            "version": None
            if c.text is None
            else {
                "version": version_id(c.text),
                "deleted": c.text.val is None,
                "current": el is not None and c.text.id == el.winner.id,
            },
            "steps": undo_preview.steps(graph, ns, c.undo),
        }
        for c in found
    ]
    return {
        "uri": show_uri(graph, ns, node),
        "node": node,
        "version": version_id(el.winner) if el is not None else None,
        "total": total,
        "offset": offset,
        "items": items,
    }


def entity_changes(graph: SqlGraph, ns: str, name: str) -> list[dict[str, Any]]:
    """An entity's changes, as :func:`noon.app.history.entity_changes` finds them."""
    review = Review(graph, ns)
    return [queue.item(graph, review, h) for h in history.entity_changes(graph, ns, name)]
