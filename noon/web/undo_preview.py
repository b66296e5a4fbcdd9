"""What a change did and what undoing it would do, element by element, as the page shows it: the
JSON of the undo previews planned in :mod:`noon.app` (:func:`noon.app.changes.preview`, whose
plan :func:`noon.app.changes.undo_changes` writes for the page and the MCP tool alike, and a
memory's timeline, :func:`noon.app.history.memory_timeline`). Used only by :mod:`noon.web.data`
and :mod:`noon.web.timeline`, whose docstrings describe the shapes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from noon.app import changes
from noon.app import queue as app_queue
from noon.core.elements import CONTENT, edge_key
from noon.graph import undo
from noon.graph.memory_view import show_uri
from noon.graph.reader import version_id
from noon.store.queries import Queries
from noon.store.readmodel.changes import Ref
from noon.store.readmodel.graph import SqlGraph
from noon.web import queue
from noon.web.diff import text_diff, value_diff
from noon.web.views import namer, who


def _shown(value: dict[str, Any] | None, name: Callable[[str], str]) -> dict[str, Any] | None:
    """An element value as the page shows it: node ids as URIs."""
    if value is None:
        return None
    out = dict(value)
    if "child" in out:
        out["child"] = name(str(out["child"]))
    return out


def _text(value: dict[str, Any] | None) -> str | None:
    return value.get("text") if value else None


def steps(graph: SqlGraph, ns: str, preview: undo.Undo) -> list[dict[str, Any]]:
    name = namer(graph, ns)
    undone = {s.key for s in preview.steps if s.draft is not None}
    out = []
    for step in preview.steps:
        kind = step.key[0]
        entry: dict[str, Any] = {
            "element": undo.label(step.key, name),
            "kind": kind,
            "known": step.known,
            "before": _shown(step.before, name),
            "after": _shown(step.after, name),
            "current": _shown(step.current, name),
            "later": [{"version": version_id(h), **who(h)} for h in step.later],
            "concurrent": [{"version": version_id(h), **who(h)} for h in step.concurrent],
            "restore": undo.describe(step, name),
            "writes": step.draft is not None,
        }
        if kind == CONTENT:
            entry["memory"] = show_uri(graph, ns, step.key[2])
            entry["diff"] = text_diff(_text(step.before), _text(step.after))
            if step.draft is not None and step.before is None:
                kids = sum(
                    1
                    for kid in graph.children(ns, step.key[2])
                    if edge_key(ns, step.key[2], kid.key_name) not in undone
                )
                if kids:
                    entry["restore"] += (
                        f"; the {kids} memory(ies) placed under it since stay, listed as "
                        "orphans unless another URI reaches them"
                    )
            for side in ("before", "after", "current"):
                if entry[side] is not None:
                    entry[side] = {"chars": len(entry[side]["text"])}
        else:
            entry["fields"] = value_diff(entry["before"], entry["after"])
        out.append(entry)
    return out


STEPS_PAGE = 50
"""Elements described in one answer of the details, by default."""
MAX_STEPS_PAGE = 200


def details(
    graph: SqlGraph, ns: str, refs: Sequence[Ref], offset: int, limit: int
) -> dict[str, Any]:
    """The changes, the elements ``offset`` to ``offset + limit`` they touched and their undo,
    as :func:`noon.app.changes.preview` plans them (the plan ``undo_change`` and the page's
    rollback write): previewed whole when at most :data:`~noon.app.changes.MAX_UNDO_OPS` ops,
    else refused with the bound said."""
    found = changes.preview(graph, refs, offset, limit)
    whole = found.plan.undo
    if whole is not None:
        summary: dict[str, Any] = {
            "possible": not whole.problems,
            "problems": list(whole.problems),
            "writes": len(whole.drafts),
            "overwrites_later": whole.overwrites_later_edits,
            "basis": found.plan.basis,
        }
    else:
        summary = {
            "possible": False,
            "problems": [found.plan.refused],
            "writes": None,
            "overwrites_later": None,
            "basis": None,
        }
    queries = Queries(graph)
    review = changes.Review(graph, ns)
    return {
        "changes": [queue.item(graph, review, app_queue.head(queries, r)) for r in refs],
        "steps": steps(graph, ns, found.page),
        "total_steps": found.total_steps,
        "offset": offset,
        "undo": summary,
    }
